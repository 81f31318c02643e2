"""ember.utils.data's DataPipes against torch.utils.data's: the same pipelines give the same items."""

import warnings

import pytest

import ember
import ember.utils.data as data
from ember.utils.data.datapipes import iter as ember_iter
from ember.utils.data.datapipes import map as ember_map

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
import torch.utils.data  # noqa: E402, F811  (a submodule: import it)
from torch.utils.data.datapipes import iter as torch_iter  # noqa: E402
from torch.utils.data.datapipes import map as torch_map  # noqa: E402


def _square(x):
    return x * x


def _is_even(x):
    return x % 2 == 0


def _mod3(x):
    return x % 3


PIPELINES = {
    "map": lambda it: it.IterableWrapper(range(10)).map(_square),
    "map columns": lambda it: it.IterableWrapper([(i, i + 1, i + 2) for i in range(4)]).map(
        lambda a, b: a + b, input_col=(0, 2)
    ),
    "map output_col": lambda it: it.IterableWrapper([[i, i + 1] for i in range(4)]).map(
        _square, input_col=1, output_col=-1
    ),
    "filter": lambda it: it.IterableWrapper(range(10)).filter(_is_even),
    "batch": lambda it: it.IterableWrapper(range(10)).batch(3),
    "batch drop_last": lambda it: it.IterableWrapper(range(10)).batch(3, drop_last=True),
    "unbatch": lambda it: it.IterableWrapper([[[0, 1], [2]], [[3, 4, 5]]]).unbatch(unbatch_level=2),
    "unbatch all": lambda it: it.IterableWrapper([[[0, [1]], [2]], [[3]]]).unbatch(unbatch_level=-1),
    "shuffle seeded": lambda it: it.IterableWrapper(range(20)).shuffle(buffer_size=6).set_seed(11),
    "shuffle off": lambda it: it.IterableWrapper(range(5)).shuffle().set_shuffle(False),
    "concat": lambda it: it.IterableWrapper(range(3)).concat(it.IterableWrapper("ab")),
    "zip": lambda it: it.IterableWrapper(range(3)).zip(it.IterableWrapper("abcd")),
    "mux": lambda it: it.IterableWrapper(range(3)).mux(it.IterableWrapper("abcd"), it.IterableWrapper([9, 8])),
    "groupby": lambda it: it.IterableWrapper(range(10)).groupby(_mod3, keep_key=True),
    "groupby sized": lambda it: it.IterableWrapper(range(12)).groupby(_mod3, group_size=2, buffer_size=5),
    "sharding": lambda it: it.IterableWrapper(range(10)).sharding_filter(),
    "collate": lambda it: it.IterableWrapper([[1, 2], [3, 4]]).collate(collate_fn=sum),
    "sampler": lambda it: it.Sampler(it.IterableWrapper(range(4))),
}


def _plain(value):
    if isinstance(value, ember.Tensor | torch.Tensor):
        return value.tolist()
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value) if isinstance(value, tuple) else [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("name", list(PIPELINES))
def test_pipelines_match(name):
    ours, theirs = PIPELINES[name](ember_iter), PIPELINES[name](torch_iter)
    assert _plain(list(ours)) == _plain(list(theirs))
    if name != "shuffle seeded":  # the seed holds for one pass; the next draws a fresh one
        assert _plain(list(ours)) == _plain(list(theirs))  # a second pass gives the same again
    try:
        expected = len(theirs)
    except TypeError:
        with pytest.raises(TypeError):
            len(ours)
    else:
        assert len(ours) == expected


def test_sharding_settings():
    def build(it):
        return it.IterableWrapper(range(20)).sharding_filter().map(_square)

    for args in [(3, 1), (4, 3)]:
        ours, theirs = build(ember_iter), build(torch_iter)
        data.graph_settings.apply_sharding(ours, *args)
        torch.utils.data.graph_settings.apply_sharding(theirs, *args)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    twice = ember_iter.IterableWrapper(range(4)).sharding_filter().sharding_filter()
    with pytest.raises(RuntimeError, match="Sharding twice"):
        data.graph_settings.apply_sharding(twice, 2, 0)


def test_fork_and_demux():
    for it in (ember_iter, torch_iter):
        a, b, c = it.IterableWrapper(range(5)).fork(3)
        assert list(zip(a, b, c, strict=True)) == [(i, i, i) for i in range(5)]
        even, odd = it.IterableWrapper(range(7)).demux(2, lambda x: x % 2)
        assert list(odd) == [1, 3, 5] and list(even) == [0, 2, 4, 6]
    small_a, _small_b = ember_iter.IterableWrapper(range(10)).fork(2, buffer_size=3)
    with pytest.raises(BufferError, match="buffer size 3 is insufficient"):
        list(small_a)
    first, _ = ember_iter.IterableWrapper(range(10)).demux(2, lambda x: 5, drop_none=False)
    with pytest.raises(ValueError, match=r"between 0 and 1\. 5 is returned"):
        next(iter(first))
    kept, other = ember_iter.IterableWrapper(range(6)).demux(2, lambda x: None if x == 2 else x % 2, drop_none=True)
    assert list(kept) == [0, 4] and list(other) == [1, 3, 5]


def test_one_iterator_at_a_time():
    for it in (ember_iter, torch_iter):
        dp = it.IterableWrapper(range(3)).map(_square)
        first = iter(dp)
        next(first)
        second = iter(dp)
        assert next(second) == 0
        with pytest.raises(RuntimeError, match="This iterator has been invalidated because another iterator"):
            next(first)


def test_map_datapipes():
    for module in (ember_map, torch_map):
        seq = module.SequenceWrapper(list(range(7)))
        assert [seq.map(_square)[i] for i in range(7)] == [i * i for i in range(7)]
        batched = seq.batch(3)
        assert len(batched) == 3 and list(batched[2]) == [6]
        assert seq.concat(module.SequenceWrapper("ab"))[8] == "b"
        assert seq.zip(module.SequenceWrapper("abc"))[1] == (1, "b") and len(seq.zip(module.SequenceWrapper("ab"))) == 2
    ours = list(ember_map.SequenceWrapper(list(range(9))).shuffle().set_seed(4))
    theirs = list(torch_map.SequenceWrapper(list(range(9))).shuffle().set_seed(4))
    assert ours == theirs


def test_functional_names_and_exports():
    theirs_iter = {n for n in torch.utils.data.IterDataPipe.functions if not n.startswith("_")}
    theirs_iter -= {"list_files", "open_files", "read_from_stream", "routed_decode", "trace_as_dataframe"}
    assert theirs_iter <= set(data.IterDataPipe.functions)
    assert set(torch.utils.data.MapDataPipe.functions) <= set(data.MapDataPipe.functions)
    missing = {n for n in dir(torch.utils.data) if not n.startswith("_")} - set(dir(data))
    assert not missing & {"IterDataPipe", "MapDataPipe", "DataChunk", "functional_datapipe", "graph_settings"}


def test_decorators_and_typing():
    @data.functional_datapipe("ember_test_repeat")
    class Repeat(data.IterDataPipe[int]):
        def __init__(self, source, times):
            self.source, self.times = source, times

        @data.runtime_validation
        def __iter__(self):
            for item in self.source:
                yield from [item] * self.times

    assert list(ember_iter.IterableWrapper([1, 2]).ember_test_repeat(2)) == [1, 1, 2, 2]
    assert str(Repeat.type) == "int"
    with pytest.raises(RuntimeError, match="Expected an instance as subtype of int"):
        list(Repeat(ember_iter.IterableWrapper(["a"]), 1))
    with data.runtime_validation_disabled():
        assert list(Repeat(ember_iter.IterableWrapper(["a"]), 1)) == ["a"]
    with pytest.raises(TypeError, match="Can not decorate function run with 'runtime_validation'"):
        data.runtime_validation(_named("run"))

    @data.argument_validation
    def consume(dp: data.IterDataPipe[int]):
        return list(dp)

    assert consume(Repeat(ember_iter.IterableWrapper([3]), 1)) == [3]
    with pytest.raises(TypeError, match="Expected argument 'dp' as a IterDataPipe"):
        consume([1])
    with pytest.raises(TypeError, match="as a subtype of hint int, but found str"):
        consume(data.IterDataPipe[str]())

    @data.non_deterministic
    class Random(data.IterDataPipe):
        def __iter__(self):
            yield 1

    with data.guaranteed_datapipes_determinism(), pytest.raises(TypeError, match="non-deterministic"):
        Random()
    assert list(Random()) == [1]


def _named(name):
    def f(self):
        return iter(())

    f.__name__ = name
    return f


def test_shuffle_settings_and_random_seed():
    pipe = ember_iter.IterableWrapper(range(30)).shuffle()
    data.graph_settings.apply_shuffle_settings(pipe, shuffle=False)
    assert list(pipe) == list(range(30))
    data.graph_settings.apply_shuffle_settings(pipe, shuffle=True)
    g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
    first = list(data.graph_settings.apply_random_seed(pipe, g1))
    second = list(data.graph_settings.apply_random_seed(pipe, g2))
    assert first == second and sorted(first) == list(range(30)) and first != list(range(30))
    plain = ember_iter.IterableWrapper(range(3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shuffled = data.graph_settings.apply_shuffle_settings(plain, shuffle=True)
    assert isinstance(shuffled, ember_iter.Shuffler) and "does not contain a `Shuffler`" in str(caught[0].message)
