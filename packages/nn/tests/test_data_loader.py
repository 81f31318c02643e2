"""``DataLoader`` against ``torch.utils.data.DataLoader``: batches, lengths and errors in the main
process, then worker processes (two, kept short: these tests start real processes).

Shuffled orders cannot match PyTorch's (see test_data.py), so shuffling is checked for
permutation, reproducibility and epoch-to-epoch change."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from data_oracle import both, error_of, lib_data, needs_torch, plain, torch

import ember
import ember.utils.data as data

if torch is not None:
    import torch.utils.data


def _dataset(lib, n=10):
    return lib_data(lib).TensorDataset(lib.arange(float(n)).reshape(n, 1), lib.arange(n))


class Records(data.Dataset):
    """Dict samples with a string, a float and an array: every collation rule in one batch."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"name": f"r{i}", "weight": i / 2, "pixels": np.full((2,), i, dtype=np.float32)}

    def __len__(self):
        return self.n


class Stream(data.IterableDataset):
    """0..n-1, each worker reading its share (every num_workers-th item from its id)."""

    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = data.get_worker_info()
        items = range(self.n)
        if info is not None and self.shard:
            items = itertools.islice(items, info.id, None, info.num_workers)
        return iter(items)

    def __len__(self):
        return self.n


class TorchStream(torch.utils.data.IterableDataset if torch is not None else object):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# ---- in the main process


@needs_torch
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"batch_size": 4},
        {"batch_size": 4, "drop_last": True},
        {"batch_size": 5, "drop_last": True},
        {"batch_size": 20},
        {"batch_size": None},
    ],
)
def test_sequential_batches_and_length_match_torch(options):
    def build(lib):
        loader = lib_data(lib).DataLoader(_dataset(lib), **options)
        return [len(loader), list(loader)]

    mine, theirs = both(build)
    assert mine == theirs


@needs_torch
def test_collation_of_records_matches_torch():
    class TorchRecords(torch.utils.data.Dataset):
        __init__, __getitem__, __len__ = Records.__init__, Records.__getitem__, Records.__len__

    mine = list(data.DataLoader(Records(5), batch_size=2))
    theirs = list(torch.utils.data.DataLoader(TorchRecords(5), batch_size=2))
    assert plain(mine) == plain(theirs)


@needs_torch
def test_samplers_batch_samplers_and_collate_fn_match_torch():
    def build(lib):
        d = lib_data(lib)
        ds = _dataset(lib, 7)
        with_sampler = d.DataLoader(ds, batch_size=2, sampler=[6, 0, 3, 3])
        with_batches = d.DataLoader(ds, batch_sampler=[[1, 2], [5], [0, 6, 4]])
        joined = d.DataLoader(ds, batch_size=3, collate_fn=lambda batch: [int(y) for _, y in batch])
        return [len(with_sampler), list(with_sampler), len(with_batches), list(with_batches), list(joined)]

    mine, theirs = both(build)
    assert mine == theirs


@needs_torch
@pytest.mark.parametrize("options", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}])
def test_iterable_dataset_batches_and_length_match_torch(options):
    mine = data.DataLoader(Stream(8), **options)
    theirs = torch.utils.data.DataLoader(TorchStream(8), **options)
    assert len(mine) == len(theirs)
    assert plain(list(mine)) == plain(list(theirs))


@needs_torch
@pytest.mark.parametrize(
    "options",
    [
        {"num_workers": -1},
        {"timeout": -1},
        {"prefetch_factor": 2},
        {"num_workers": 1, "prefetch_factor": -1},
        {"persistent_workers": True},
        {"shuffle": True, "sampler": [0, 1]},
        {"batch_sampler": [[0]], "batch_size": 2},
        {"batch_sampler": [[0]], "drop_last": True},
        {"batch_size": None, "drop_last": True},
        {"multiprocessing_context": "fork"},
        {"num_workers": 1, "multiprocessing_context": "no-such-method"},
        {"num_workers": 1, "multiprocessing_context": 3},
    ],
)
def test_option_errors_match_torch(options):
    mine = error_of(lambda: data.DataLoader(_dataset(ember), **options))
    theirs = error_of(lambda: torch.utils.data.DataLoader(_dataset(torch), **options))
    assert mine == theirs and mine is not None


@needs_torch
@pytest.mark.parametrize("options", [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}])
def test_iterable_dataset_option_errors_match_torch(options):
    mine = error_of(lambda: data.DataLoader(Stream(3), **options))
    theirs = error_of(lambda: torch.utils.data.DataLoader(TorchStream(3), **options))
    assert mine[0] is theirs[0] and mine[1].split("=")[0] == theirs[1].split("=")[0]


def test_defining_attributes_are_frozen():
    loader = data.DataLoader(_dataset(ember), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    loader.num_workers = 0  # not one of them


def test_shuffle_with_a_generator_is_a_reproducible_permutation():
    def epochs(seed):
        loader = data.DataLoader(_dataset(ember, 12), batch_size=5, shuffle=True, generator=_seeded(seed))
        return [[y.tolist() for _, y in loader] for _ in range(2)]

    first, second = epochs(0)
    assert [len(b) for b in first] == [5, 5, 2]
    assert sorted(_flat(first)) == sorted(_flat(second)) == list(range(12))
    assert first != second
    assert epochs(0) == [first, second]
    assert epochs(1) != [first, second]


def _flat(batches):
    return [item for batch in batches for item in (batch if isinstance(batch, list) else batch.tolist())]


def _seeded(seed):
    return ember.Generator().manual_seed(seed)


def test_pin_memory_is_accepted_with_the_warning_of_a_cpu_build():
    loader = data.DataLoader(_dataset(ember, 4), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="no accelerator is found"):
        batches = list(loader)
    assert len(batches) == 2


def test_iterable_dataset_longer_than_its_len_warns():
    class Liar(Stream):
        def __len__(self):
            return 2

    loader = data.DataLoader(Liar(4), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        assert list(loader) == [0, 1, 2, 3]


def test_get_worker_info_is_none_in_the_main_process():
    assert data.get_worker_info() is None


# ---- worker processes


def test_workers_give_the_batches_of_the_main_process_in_order():
    single = [y.tolist() for _, y in data.DataLoader(_dataset(ember, 23), batch_size=3)]
    loader = data.DataLoader(_dataset(ember, 23), batch_size=3, num_workers=2, prefetch_factor=3)
    assert len(loader) == 8
    assert [y.tolist() for _, y in loader] == single
    records = list(data.DataLoader(Records(5), batch_size=2, num_workers=2))
    assert plain(records) == plain(list(data.DataLoader(Records(5), batch_size=2)))


def test_unordered_results_hold_every_batch():
    loader = data.DataLoader(_dataset(ember, 10), batch_size=2, num_workers=2, in_order=False)
    assert sorted(y.tolist() for _, y in loader) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


class WhoAmI(data.Dataset):
    """Each sample says which worker read it and what that worker's info and seeds were."""

    def __getitem__(self, i):
        info = data.get_worker_info()
        assert info.dataset is self and info.worker_method == "multiprocessing"  # this process's copy
        return (i, info.id, info.num_workers, info.seed, os.environ.get("EMBER_TEST_WORKER", ""), float(ember.rand(())))

    def __len__(self):
        return 8


def _rows(loader):
    """The samples of a loader over ``WhoAmI``, uncollated."""
    columns = lambda batch: [field.tolist() if isinstance(field, ember.Tensor) else list(field) for field in batch]  # noqa: E731
    return [row for batch in loader for row in zip(*columns(batch), strict=True)]


def _mark_worker(worker_id):
    os.environ["EMBER_TEST_WORKER"] = f"init{worker_id}"


def test_worker_info_init_fn_and_seeds():
    loader = data.DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=_mark_worker, generator=_seeded(7))
    rows = _rows(loader)
    assert [row[0] for row in rows] == list(range(8))
    # Batches go round-robin: batch k to worker k % 2.
    assert [row[1] for row in rows] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert {row[2] for row in rows} == {2}
    assert {row[4] for row in rows} == {"init0", "init1"}
    seeds = {row[1]: row[3] for row in rows}
    assert seeds[1] == seeds[0] + 1  # base seed + worker id, as in PyTorch
    # The same generator seed gives the same worker seeds and the same random numbers in workers.
    again = data.DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=_seeded(7))
    assert [row[5] for row in _rows(again)] == [row[5] for row in rows]
    assert len({row[5] for row in rows}) == 8


def test_iterable_dataset_sharded_by_worker_info():
    loader = data.DataLoader(Stream(11), batch_size=2, num_workers=2)
    batches = [b.tolist() for b in loader]
    assert sorted(_flat(batches)) == list(range(11))
    # Unsharded, every worker yields the whole stream, as in PyTorch.
    duplicated = list(data.DataLoader(Stream(5, shard=False), batch_size=None, num_workers=2))
    assert sorted(duplicated) == sorted(list(range(5)) * 2)


def test_persistent_workers_serve_several_epochs():
    loader = data.DataLoader(Stream(6), batch_size=2, num_workers=2, persistent_workers=True)
    first = sorted(_flat(loader))
    iterator = loader._iterator
    workers = [w.pid for w in iterator._workers]
    # An epoch cut short must not leak its batches into the next one.
    next(iter(loader))
    second = sorted(_flat(loader))
    assert first == second == list(range(6))
    assert loader._iterator is iterator and [w.pid for w in iterator._workers] == workers
    iterator._shutdown_workers()


class Failing(data.Dataset):
    def __getitem__(self, i):
        if i == 3:
            raise KeyError("missing sample")
        return i

    def __len__(self):
        return 6


def test_a_worker_exception_is_raised_with_its_traceback():
    loader = iter(data.DataLoader(Failing(), batch_size=2, num_workers=2))
    assert next(loader).tolist() == [0, 1]
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1") as caught:
        next(loader)
    assert "missing sample" in str(caught.value) and "Traceback" in str(caught.value)


def _failing_init(worker_id):
    raise ValueError(f"bad init {worker_id}")


def test_a_failing_worker_init_fn_is_raised():
    loader = data.DataLoader(_dataset(ember, 4), num_workers=2, worker_init_fn=_failing_init)
    with pytest.raises(ValueError, match="bad init 0"):
        list(loader)


class Slow(data.Dataset):
    def __getitem__(self, i):
        time.sleep(0.6)
        return i

    def __len__(self):
        return 2


def test_timeout_raises():
    loader = data.DataLoader(Slow(), num_workers=1, timeout=0.1)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.1 seconds"):
        next(iter(loader))


class Dying(data.Dataset):
    def __getitem__(self, i):
        os._exit(3)

    def __len__(self):
        return 2


def test_a_dead_worker_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(data.DataLoader(Dying(), num_workers=1))


def test_a_timeout_in_the_main_process_is_refused_as_pytorch_does():
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(data.DataLoader(_dataset(ember), timeout=1))


def test_spawned_workers():
    # Spawned workers receive the dataset and collate function by pickling (the default start
    # method on macOS, and forkserver's way from Python 3.14 on).
    loader = data.DataLoader(_dataset(ember, 7), batch_size=3, num_workers=1, multiprocessing_context="spawn")
    assert [y.tolist() for _, y in loader] == [[0, 1, 2], [3, 4, 5], [6]]


@needs_torch
# PyTorch's half-built iterator fails again in its __del__; that noise is PyTorch's own.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_zero_prefetch_factor_is_refused_on_iteration_as_in_torch():
    mine = data.DataLoader(_dataset(ember), num_workers=1, prefetch_factor=0)
    theirs = torch.utils.data.DataLoader(_dataset(torch), num_workers=1, prefetch_factor=0)
    assert error_of(lambda: iter(mine)) == error_of(lambda: iter(theirs))


def test_reachable_as_an_attribute_after_import_ember():
    # Scripts write `import torch` and then `torch.utils.data.DataLoader`, with no import of
    # torch.utils.data of their own.
    script = "import ember as torch; print(torch.utils.data.DataLoader.__name__)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "DataLoader"


class DiesOnce(data.Dataset):
    """The first worker to read index 0 dies; later workers find the mark file and read on."""

    def __init__(self, mark):
        self.mark = mark

    def __getitem__(self, i):
        if i == 0 and not os.path.exists(self.mark):
            open(self.mark, "w").close()
            os._exit(3)
        return i

    def __len__(self):
        return 2


def test_persistent_workers_restart_after_a_worker_died(tmp_path):
    loader = data.DataLoader(DiesOnce(str(tmp_path / "died")), num_workers=1, persistent_workers=True)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)
    assert [int(b) for b in loader] == [0, 1]
    loader._iterator._shutdown_workers()


def _uneven_stream(lib_data, n):
    """Worker ``id`` yields ``n - 2 * id`` items starting at ``100 * id``: workers end at different
    batches, which decides how the loader interleaves and ends."""

    class Uneven(lib_data.IterableDataset):
        def __iter__(self):
            info = lib_data.get_worker_info()
            start, count = (0, n) if info is None else (100 * info.id, n - 2 * info.id)
            return iter(range(start, start + count))

    return Uneven()


@needs_torch
@pytest.mark.parametrize(("batch_size", "drop_last"), [(2, False), (2, True)])
def test_worker_batches_of_an_iterable_dataset_interleave_as_in_torch(batch_size, drop_last):
    def batches(lib):
        ldata = lib_data(lib)
        loader = ldata.DataLoader(_uneven_stream(ldata, 7), batch_size=batch_size, drop_last=drop_last, num_workers=2)
        return [batch.tolist() for batch in loader]

    assert batches(ember) == batches(torch)
