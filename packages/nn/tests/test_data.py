"""Datasets, samplers and collation of ``ember.utils.data`` against ``torch.utils.data``.

The random samplers cannot reproduce PyTorch's orders (Ember's generator is Philox, PyTorch's CPU
generator a Mersenne Twister; ``ember.randperm`` and ``torch.randperm`` differ for one seed), so
they are checked for what holds for any generator: permutations, ranges, lengths, reproducibility
from a seed, and frequencies for the weighted sampler."""

from __future__ import annotations

import collections
import collections.abc
import sys
import warnings

import numpy as np
import pytest
from data_oracle import both, error_of, lib_data, needs_torch, plain, torch

import ember
import ember.utils.data as data

if torch is not None:
    import torch.utils.data


def _seeded(lib, seed=0):
    return lib.Generator().manual_seed(seed)


# ---- datasets


@needs_torch
def test_tensor_dataset_matches_torch():
    def build(lib):
        ds = lib_data(lib).TensorDataset(lib.arange(12.0).reshape(4, 3), lib.arange(4))
        return [len(ds), ds[1], ds[-1], ds[1:3]]

    mine, theirs = both(build)
    assert mine == theirs
    assert error_of(lambda: data.TensorDataset(ember.zeros(3), ember.zeros(4))) == error_of(
        lambda: torch.utils.data.TensorDataset(torch.zeros(3), torch.zeros(4))
    )


class _Squares(data.Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


@needs_torch
def test_concat_dataset_indexing_and_errors_match_torch():
    class TorchSquares(torch.utils.data.Dataset):
        __init__, __getitem__, __len__ = _Squares.__init__, _Squares.__getitem__, _Squares.__len__

    mine = data.ConcatDataset([_Squares(3), _Squares(0), _Squares(4)])
    theirs = torch.utils.data.ConcatDataset([TorchSquares(3), TorchSquares(0), TorchSquares(4)])
    assert mine.cumulative_sizes == theirs.cumulative_sizes == [3, 3, 7]
    assert [mine[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    assert error_of(lambda: mine[-8]) == error_of(lambda: theirs[-8])
    assert type(error_of(lambda: mine[7])[0]) is type(error_of(lambda: theirs[7])[0])
    assert error_of(lambda: data.ConcatDataset([])) == error_of(lambda: torch.utils.data.ConcatDataset([]))

    class Stream(data.IterableDataset):
        def __iter__(self):
            yield 1

    error = error_of(lambda: data.ConcatDataset([_Squares(2), Stream()]))
    assert error == (AssertionError, "ConcatDataset does not support IterableDataset")
    added = _Squares(2) + _Squares(1)
    assert isinstance(added, data.ConcatDataset) and list(added) == [0, 1, 0]


def test_iterable_datasets_chain_with_plus():
    class Stream(data.IterableDataset):
        def __init__(self, items):
            self.items = items

        def __iter__(self):
            return iter(self.items)

        def __len__(self):
            return len(self.items)

    chained = Stream([1, 2]) + Stream([3])
    assert isinstance(chained, data.ChainDataset)
    assert list(chained) == [1, 2, 3] and len(chained) == 3
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(data.ChainDataset([Stream([1]), _Squares(2)]))


def test_base_classes_raise_as_pytorch():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        data.Dataset()[0]
    with pytest.raises(TypeError):
        len(data.Dataset())
    with pytest.raises(NotImplementedError):
        iter(data.Sampler())


def test_subset_indexes_and_forwards_batched_reads():
    calls = []

    class Batched(_Squares):
        def __getitems__(self, indices):
            calls.append(list(indices))
            return [-i for i in indices]

    plain_subset = data.Subset(_Squares(10), [7, 2, 5])
    assert len(plain_subset) == 3 and plain_subset[0] == 49 and plain_subset.__getitems__([2, 0]) == [25, 49]
    batched = data.Subset(Batched(10), [7, 2, 5])
    assert batched.__getitems__([1, 2]) == [-2, -5] and calls == [[2, 5]]

    class OnlyGetitem(data.Subset):
        def __getitem__(self, idx):
            return 0

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        OnlyGetitem(_Squares(3), [0])


@needs_torch
def test_stack_dataset_matches_torch():
    def build(lib):
        d = lib_data(lib)
        a, b = d.TensorDataset(lib.arange(3)), d.TensorDataset(lib.arange(3.0) * 2)
        positional, named = d.StackDataset(a, b), d.StackDataset(x=a, y=b)
        return [len(positional), positional[1], named[2], positional.__getitems__([0, 2]), named.__getitems__([1])]

    mine, theirs = both(build)
    assert mine == theirs
    for args, kwargs in (((), {}), ((_Squares(2), _Squares(3)), {}), ((_Squares(2),), {"y": _Squares(2)})):
        assert error_of(lambda a=args, k=kwargs: data.StackDataset(*a, **k)) == error_of(
            lambda a=args, k=kwargs: torch.utils.data.StackDataset(*a, **k)
        )


# ---- random_split


@needs_torch
@pytest.mark.parametrize(
    ("n", "lengths"),
    [(10, [3, 7]), (10, [0.8, 0.2]), (11, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]), (5, [0.1, 0.1, 0.8]), (3, [1.0])],
)
def test_random_split_lengths_match_torch(n, lengths):
    with warnings.catch_warnings(record=True) as mine_warnings:
        warnings.simplefilter("always")
        mine = data.random_split(range(n), lengths, generator=_seeded(ember))
    with warnings.catch_warnings(record=True) as torch_warnings:
        warnings.simplefilter("always")
        theirs = torch.utils.data.random_split(range(n), lengths, generator=_seeded(torch))
    assert [len(s) for s in mine] == [len(s) for s in theirs]
    assert [str(w.message) for w in mine_warnings] == [str(w.message) for w in torch_warnings]
    assert sorted(i for s in mine for i in s) == list(range(n))  # a partition of the dataset
    assert all(isinstance(s, data.Subset) for s in mine)


@needs_torch
@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [-0.5, 1.5], [0.3, 0.3]])
def test_random_split_errors_match_torch(lengths):
    assert error_of(lambda: data.random_split(range(5), lengths)) == error_of(
        lambda: torch.utils.data.random_split(range(5), lengths)
    )


def test_random_split_is_reproducible_from_the_seed():
    def split(seed):
        return [list(s) for s in data.random_split(range(20), [5, 15], generator=_seeded(ember, seed))]

    assert split(1) == split(1)
    assert split(1) != split(2)
    ember.manual_seed(3)
    first = [list(s) for s in data.random_split(range(20), [10, 10])]
    ember.manual_seed(3)
    assert [list(s) for s in data.random_split(range(20), [10, 10])] == first


# ---- samplers


@needs_torch
@pytest.mark.parametrize(("n", "batch_size", "drop_last"), [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False)])
def test_batch_sampler_matches_torch(n, batch_size, drop_last):
    def build(lib):
        d = lib_data(lib)
        sampler = d.BatchSampler(d.SequentialSampler(range(n)), batch_size, drop_last)
        return [list(sampler), len(sampler)]

    mine, theirs = both(build)
    assert mine == theirs


@needs_torch
@pytest.mark.parametrize(
    ("cls", "args"),
    [
        ("BatchSampler", (range(3), 0, False)),
        ("BatchSampler", (range(3), True, False)),
        ("BatchSampler", (range(3), 2, 1)),
        ("RandomSampler", (range(3), 1)),
        ("RandomSampler", (range(3), False, 0)),
        ("RandomSampler", (range(3), False, 2.0)),
        ("WeightedRandomSampler", ([1.0, 2.0], 0)),
        ("WeightedRandomSampler", ([1.0, 2.0], 2, 1)),
        ("WeightedRandomSampler", ([[1.0, 2.0]], 2)),
    ],
)
def test_sampler_errors_match_torch(cls, args):
    assert error_of(lambda: getattr(data, cls)(*args)) == error_of(lambda: getattr(torch.utils.data, cls)(*args))


def test_sequential_and_random_samplers():
    assert list(data.SequentialSampler(range(4))) == [0, 1, 2, 3]
    sampler = data.RandomSampler(range(10), generator=_seeded(ember))
    assert sorted(sampler) == list(range(10)) and len(sampler) == 10
    first, second = list(sampler), list(sampler)
    assert first != second  # the generator moves on between epochs
    assert list(data.RandomSampler(range(10), generator=_seeded(ember))) == list(
        data.RandomSampler(range(10), generator=_seeded(ember))
    )
    # More samples than items: whole permutations, then a prefix of one more.
    long = list(data.RandomSampler(range(4), num_samples=10, generator=_seeded(ember)))
    assert len(long) == 10 and sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3] and len(set(long[8:])) == 2
    drawn = list(data.RandomSampler(range(3), replacement=True, num_samples=70, generator=_seeded(ember)))
    assert len(drawn) == 70 and set(drawn) == {0, 1, 2}


def test_random_sampler_without_generator_follows_the_global_seed():
    ember.manual_seed(5)
    first = list(data.RandomSampler(range(30)))
    second = list(data.RandomSampler(range(30)))
    ember.manual_seed(5)
    assert list(data.RandomSampler(range(30))) == first
    assert first != second


def test_subset_random_sampler_permutes_the_indices():
    indices = [10, 20, 30, 40, 50]
    sampler = data.SubsetRandomSampler(indices, generator=_seeded(ember))
    assert sorted(sampler) == indices and len(sampler) == 5


def test_weighted_random_sampler_follows_the_weights():
    weights = [1.0, 0.0, 3.0, 4.0]
    drawn = list(data.WeightedRandomSampler(weights, 8000, generator=_seeded(ember)))
    counts = np.bincount(drawn, minlength=4) / len(drawn)
    assert counts[1] == 0
    np.testing.assert_allclose(counts, np.array(weights) / 8.0, atol=0.03)
    unique = list(data.WeightedRandomSampler([1.0, 2.0, 0.5, 1.0], 4, replacement=False, generator=_seeded(ember)))
    assert sorted(unique) == [0, 1, 2, 3]
    sampler = data.WeightedRandomSampler(np.array([1, 2]), 3)
    assert sampler.weights.dtype == ember.float64 and len(sampler) == 3


# ---- collation

Point = collections.namedtuple("Point", ["x", "y"])


class Tagged(dict):
    """A dict subclass: collation must keep the type."""


SAMPLES = {
    "tensors": lambda lib: [lib.arange(3), lib.arange(3) + 1],
    "float_tensors": lambda lib: [lib.ones(2, 2), lib.zeros(2, 2)],
    "arrays": lambda lib: [np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)],
    "int_arrays": lambda lib: [np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int16)],
    "numpy_scalars": lambda lib: [np.float32(1.5), np.float32(2.0)],
    "numpy_ints": lambda lib: [np.int32(1), np.int32(7)],
    "numpy_bools": lambda lib: [np.bool_(True), np.bool_(False)],
    "floats": lambda lib: [1.5, 2.0, -3.0],
    "ints": lambda lib: [1, 2, 3],
    "bools": lambda lib: [True, False],
    "strings": lambda lib: ["a", "bc"],
    "bytes": lambda lib: [b"a", b"b"],
    "tuples": lambda lib: [(1, "a", 2.0), (2, "b", 3.0)],
    "lists": lambda lib: [[1, 2], [3, 4]],
    "dicts": lambda lib: [{"x": lib.zeros(2), "y": 1}, {"x": lib.ones(2), "y": 2}],
    "dict_subclass": lambda lib: [Tagged(a=1.0), Tagged(a=2.0)],
    "namedtuples": lambda lib: [Point(lib.tensor([1.0]), 1), Point(lib.tensor([2.0]), 2)],
    "nested": lambda lib: [{"p": (np.zeros(2), [1, 2])}, {"p": (np.ones(2), [3, 4])}],
}


@needs_torch
@pytest.mark.parametrize("name", SAMPLES)
def test_default_collate_matches_torch(name):
    mine, theirs = both(lambda lib: lib_data(lib).default_collate(SAMPLES[name](lib)))
    assert mine == theirs


@needs_torch
@pytest.mark.parametrize("name", SAMPLES)
def test_default_convert_matches_torch(name):
    mine, theirs = both(lambda lib: lib_data(lib).default_convert(SAMPLES[name](lib)[0]))
    assert mine == theirs


@needs_torch
def test_default_convert_leaves_string_arrays_and_other_values():
    for value in (np.array(["a", "b"]), np.str_("a"), 3, range(3), None):
        mine, theirs = both(lambda lib, v=value: lib_data(lib).default_convert(v))
        assert mine == theirs


@needs_torch
@pytest.mark.parametrize(
    "batch",
    [
        lambda lib: [[1, 2], [3]],
        lambda lib: [object(), object()],
        lambda lib: [np.array(["a"]), np.array(["b"])],
        lambda lib: [None, None],
        lambda lib: [lib.zeros(2), lib.zeros(3)],
    ],
)
def test_default_collate_errors_match_torch(batch):
    mine = error_of(lambda: data.default_collate(batch(ember)))
    theirs = error_of(lambda: torch.utils.data.default_collate(batch(torch)))
    assert mine[0] is theirs[0]
    assert mine[1].replace("ember", "torch") == theirs[1]


def test_collate_with_a_custom_map():
    from ember.utils.data.collate import collate, default_collate_fn_map

    def join(batch, *, collate_fn_map):
        return "+".join(batch)

    table = {**default_collate_fn_map, str: join}
    result = collate([("a", 1), ("b", 2)], collate_fn_map=table)
    assert result[0] == "a+b" and plain(result[1]) == ("tensor", "int64", (2,), [1, 2])


# ---- DistributedSampler


@needs_torch
@pytest.mark.parametrize(
    ("n", "replicas", "drop_last"), [(10, 3, False), (10, 3, True), (9, 3, True), (2, 4, False), (7, 2, False)]
)
def test_distributed_sampler_shares_match_torch(n, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    for rank in range(replicas):
        mine = data.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert (list(mine), len(mine), mine.total_size) == (list(theirs), len(theirs), theirs.total_size)


def test_distributed_sampler_shuffles_one_permutation_per_epoch():
    shares = [data.DistributedSampler(range(12), 3, rank, seed=4) for rank in range(3)]
    first = [list(s) for s in shares]
    assert sorted(i for share in first for i in share) == list(range(12))
    assert [list(s) for s in shares] == first  # the same epoch repeats its order
    for s in shares:
        s.set_epoch(1)
    second = [list(s) for s in shares]
    assert second != first and sorted(i for share in second for i in share) == list(range(12))


@needs_torch
def test_distributed_sampler_errors():
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    assert error_of(lambda: data.DistributedSampler(range(4), 2, 2)) == error_of(lambda: TorchSampler(range(4), 2, 2))
    # No default process group: the distributed package says so, as PyTorch's does.
    assert error_of(lambda: data.DistributedSampler(range(4))) == error_of(lambda: TorchSampler(range(4)))


def test_distributed_sampler_without_the_distributed_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "ember.distributed", None)  # what an import finds when it is not installed
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        data.DistributedSampler(range(4))
