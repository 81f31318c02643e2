"""Indirect loads and scatters (``lowering_indirect.py``, ``lowering_scatter.py``) compiled against eager
and against PyTorch: embedding, index_select, gather, advanced indexing, index_put and the embedding
backward; bounds checks; determinism of accumulation; fusion of an embedding with the ops after it."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

DTYPES = {"float32": (ember.float32, torch.float32), "float64": (ember.float64, torch.float64)}
INDEX_DTYPES = {"int64": (ember.int64, torch.int64), "int32": (ember.int32, torch.int32)}


def _both(array: np.ndarray, dtypes: tuple) -> tuple:
    return ember.tensor(array).to(dtypes[0]), torch.tensor(array).to(dtypes[1])


def _check(fn, arrays: list, dtypes: list, lowered: str, rtol: float = 1e-6):
    """``fn`` compiled, eager and under PyTorch on the same data: equal (and ``lowered`` was lowered)."""
    ours = [_both(a, d)[0] for a, d in zip(arrays, dtypes, strict=True)]
    theirs = [_both(a, d)[1] for a, d in zip(arrays, dtypes, strict=True)]
    compiled, rec = compile_with_inductor(lambda *a: fn(ember, *a))
    got, want, oracle = compiled(*ours), fn(ember, *ours), fn(torch, *theirs)
    assert_same(got, want, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(got.numpy(), oracle.numpy(), rtol=rtol, atol=rtol)
    assert lowered in {str(t) for t in rec.graphs[0].lowered}, rec.graphs[0].fallbacks
    assert not [op for op, _ in rec.graphs[0].fallbacks if lowered in op]
    return rec


def _index(rng, n: int, shape: tuple, negative: bool = False) -> np.ndarray:
    low = -n if negative else 0
    return rng.integers(low, n, size=shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
def test_embedding(dtype, idtype):
    rng = np.random.default_rng(0)
    w, idx = rng.standard_normal((50, 24)), _index(rng, 50, (3, 7))
    _check(lambda t, w, i: t.nn.functional.embedding(i, w) * 2 + 1, [w, idx], [DTYPES[dtype], INDEX_DTYPES[idtype]],
           "aten.embedding.default")  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dtype, idtype, dim):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5, 4))
    idx = _index(rng, x.shape[dim], (9,))
    _check(lambda t, x, i: t.index_select(x, dim, i).sin(), [x, idx], [DTYPES[dtype], INDEX_DTYPES[idtype]],
           "aten.index_select.default")  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("n", [3, 3000])
def test_gather_any_dimension_size(dtype, dim, n):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, 4) if dim == 0 else (4, n))
    idx = _index(rng, n, (5, 4) if dim == 0 else (4, 5))
    _check(lambda t, x, i: t.gather(x, dim, i) - 1, [x, idx], [DTYPES[dtype], INDEX_DTYPES["int64"]],
           "aten.gather.default")  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize(
    "case",
    ["first", "middle", "two_adjacent", "separated", "broadcast"],
)
def test_advanced_indexing_with_negative_indices(dtype, idtype, case):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 6, 7))
    i5, i6, i7 = _index(rng, 5, (4,), True), _index(rng, 6, (4,), True), _index(rng, 7, (4,), True)
    fns = {
        "first": (lambda t, x, a, b: x[a] * 3, [i5, i6]),
        "middle": (lambda t, x, a, b: x[:, b] * 3, [i5, i6]),
        "two_adjacent": (lambda t, x, a, b: x[:, a, b] * 3, [i6, i7]),
        "separated": (lambda t, x, a, b: x[a, :, b] * 3, [i5, i7]),
        "broadcast": (lambda t, x, a, b: x[a.reshape(4, 1), :, b.reshape(1, 4)] * 3, [i5, i7]),
    }
    fn, idx = fns[case]
    _check(fn, [x, *idx], [DTYPES[dtype], INDEX_DTYPES[idtype], INDEX_DTYPES[idtype]], "aten.index.Tensor")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(dtype, idtype, accumulate):
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal((8, 5)), rng.standard_normal((6, 5))
    # distinct rows when not accumulating (which duplicate wins is not specified), some negative
    idx = rng.permutation(np.arange(-8, 8))[:6] if not accumulate else _index(rng, 8, (6,), True)
    if not accumulate:
        idx = np.array([i for i in idx if (i + 8) % 8 not in [(j + 8) % 8 for j in idx[: list(idx).index(i)]]])
        v = v[: len(idx)]
    _check(lambda t, x, i, v: t.index_put(x * 2, (i,), v, accumulate=accumulate) + 1, [x, idx, v],
           [DTYPES[dtype], INDEX_DTYPES[idtype], DTYPES[dtype]], "aten.index_put.default")  # fmt: skip


def test_index_put_broadcast_values_and_two_index_tensors():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5, 6))
    a, b = _index(rng, 4, (3,)), _index(rng, 5, (3,))
    v = rng.standard_normal((6,))
    _check(lambda t, x, a, b, v: t.index_put(x, (a, b), v, accumulate=True), [x, a, b, v],
           [DTYPES["float64"], INDEX_DTYPES["int64"], INDEX_DTYPES["int64"], DTYPES["float64"]],
           "aten.index_put.default")  # fmt: skip


def test_setitem_with_a_slice_between_index_tensors():
    rng = np.random.default_rng(8)
    x, v = rng.standard_normal((4, 5, 6)), rng.standard_normal((3, 5))
    a, b = _index(rng, 4, (3,)), _index(rng, 6, (3,))

    def fn(t, x, a, b, v):
        y = x * 1
        y[a, :, b] = v
        return y

    _check(fn, [x, a, b, v], [DTYPES["float64"], INDEX_DTYPES["int64"], INDEX_DTYPES["int64"], DTYPES["float64"]],
           "aten.index_put.default")  # fmt: skip


OUT_OF_RANGE = {
    "embedding": (lambda w, i: ember.nn.functional.embedding(i, w), 9),
    "embedding_negative": (lambda w, i: ember.nn.functional.embedding(i, w), -1),
    "index_select": (lambda w, i: w.index_select(0, i) + 1, 9),
    "gather": (lambda w, i: w.gather(0, i.reshape(2, 1).expand(2, 3)) + 1, 9),
    "index": (lambda w, i: w[i] + 1, 9),
    "index_negative": (lambda w, i: w[i] + 1, -10),
    "index_put": (lambda w, i: w.index_put((i,), ember.ones(2, 3)), 9),
    "index_put_accumulate": (lambda w, i: w.index_put((i,), ember.ones(2, 3), accumulate=True), -10),
}


@pytest.mark.parametrize("case", OUT_OF_RANGE)
def test_out_of_range_indices_raise_as_eager(case):
    fn, bad = OUT_OF_RANGE[case]
    w = ember.randn(5, 3)
    compiled, _ = compile_with_inductor(fn)
    assert_same(compiled(w, ember.tensor([1, 2])), fn(w, ember.tensor([1, 2])))
    with pytest.raises(Exception) as want:
        fn(w, ember.tensor([1, bad]))
    with pytest.raises(type(want.value)) as got:
        compiled(w, ember.tensor([1, bad]))
    assert str(got.value) == str(want.value)  # the value, the dimension and its size, as eager says


@pytest.mark.parametrize("op", ["embedding", "index_select", "index", "index_put"])
def test_empty_index_tensors(op):
    fns = {
        "embedding": lambda w, i: ember.nn.functional.embedding(i, w) * 2,
        "index_select": lambda w, i: w.index_select(0, i) * 2,
        "index": lambda w, i: w[i] * 2,
        "index_put": lambda w, i: w.index_put((i,), ember.ones(0, 3), accumulate=True) * 2,
    }
    w, i = ember.randn(5, 3), ember.tensor([], dtype=ember.int64)
    compiled, _ = compile_with_inductor(fns[op])
    assert_same(compiled(w, i), fns[op](w, i))


@pytest.fixture
def threads():
    before = ember.get_num_threads()
    yield ember.set_num_threads
    ember.set_num_threads(before)


def test_accumulation_with_duplicates_is_the_same_bits_on_any_thread_count(threads):
    rng = np.random.default_rng(6)
    # large enough for parallel loops; every row hit many times
    x = ember.tensor(rng.standard_normal((16, 4096)).astype(np.float32))
    idx = ember.tensor(rng.integers(0, 16, size=(300,)))
    v = ember.tensor(rng.standard_normal((300, 4096)).astype(np.float32) * 1e3)
    compiled, _ = compile_with_inductor(lambda x, i, v: x.index_put((i,), v, accumulate=True))
    results = []
    for n in (1, 2, 3):
        threads(n)
        results.append(compiled(x, idx, v).numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    want = x.index_put((idx,), v, accumulate=True).numpy()
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-2)


def test_embedding_backward_is_deterministic_and_matches_eager(threads):
    rng = np.random.default_rng(7)
    w = ember.tensor(rng.standard_normal((40, 1024)).astype(np.float32), requires_grad=True)
    idx = ember.tensor(rng.integers(0, 40, size=(8, 64)))
    g = ember.tensor(rng.standard_normal((8, 64, 1024)).astype(np.float32))
    compiled, rec = compile_with_inductor(lambda w, i: ember.nn.functional.embedding(i, w, padding_idx=3))
    grads = []
    for n in (1, 2, 3):
        threads(n)
        w.grad = None
        compiled(w, idx).backward(g)
        grads.append(w.grad.numpy().copy())
    for r in grads[1:]:
        np.testing.assert_array_equal(r, grads[0])
    w.grad = None
    ember.nn.functional.embedding(idx, w, padding_idx=3).backward(g)
    np.testing.assert_allclose(grads[0], w.grad.numpy(), rtol=1e-5, atol=1e-4)
    assert not (grads[0][3] != 0).any()  # the padding row gets no gradient
    assert all(not fallbacks for fallbacks in (r.fallbacks for r in rec.graphs))


def test_embedding_fuses_with_the_ops_after_it(capfd):
    w, pos = ember.randn(100, 32), ember.randn(16, 32)
    idx = ember.randint(0, 100, (4, 16))

    def fn(w, pos, i):
        return (ember.nn.functional.embedding(i, w) + pos).relu() * 2

    compiled, rec = compile_with_inductor(fn)
    ember.logs.set_logs(perf_hints=True)
    try:
        got = compiled(w, pos, idx)
    finally:
        ember.logs.set_logs()
    assert_same(got, fn(w, pos, idx))
    graph = rec.graphs[0]
    assert not graph.fallbacks
    assert "runs as an extern call" not in capfd.readouterr().err
    # one kernel: the index is read, checked, and the row loaded, added, activated and stored in one loop nest
    assert graph.source.count('extern "C" int kernel') == 1, graph.source
    # the row's index is read and checked once, outside the vectorized loop over the embedding dim
    kernel = graph.source[graph.source.index('extern "C" int kernel0') :]
    assert kernel.index("ember_index_fail") < kernel.index("#pragma omp simd")


@pytest.fixture
def fresh_compiler():
    """Compiled code of ``ember.compile`` dropped afterwards (a later test compiles the same module code)."""
    yield
    ember.compiler.reset()


def test_small_gpt_trains_five_steps_as_eager(fresh_compiler):
    from training_models import gpt, gpt_batch

    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    model = gpt(ember, layers=1, width=32, context=16)
    twin = copy.deepcopy(model)
    compiled = ember.compile(twin, backend="inductor")
    opt_a = ember.optim.SGD(model.parameters(), lr=0.1)
    opt_b = ember.optim.SGD(twin.parameters(), lr=0.1)
    for _ in range(5):
        x, y = (ember.tensor(a) for a in gpt_batch(rng, batch=2, context=16))
        want, got = model(x, y), compiled(x, y)
        np.testing.assert_allclose(float(got), float(want), rtol=1e-4)
        for opt, loss in ((opt_a, want), (opt_b, got)):
            opt.zero_grad()
            loss.backward()
            opt.step()


def test_embedding_with_a_dynamic_number_of_tokens(fresh_compiler):
    emb = ember.nn.Embedding(100, 16)

    def fn(i):
        return (emb(i) * 2).sum(-1)

    compiled = ember.compile(fn, dynamic=True)
    with ember.no_grad():
        for n in (5, 9, 13):
            i = ember.randint(0, 100, (n,))
            assert_same(compiled(i), fn(i))
        with pytest.raises(IndexError, match="index out of range in self"):
            compiled(ember.tensor([1, 100, 3, 4, 5, 6]))


def test_embedding_backward_over_a_dynamic_number_of_tokens(fresh_compiler, capfd):
    emb = ember.nn.Embedding(50, 8)
    twin = copy.deepcopy(emb)
    compiled = ember.compile(lambda i: (twin(i) * 3).pow(2).sum(), dynamic=True)
    ember.logs.set_logs(perf_hints=True)
    try:
        for n in (5, 9, 13):
            i = ember.randint(0, 50, (n,))
            emb.weight.grad, twin.weight.grad = None, None
            compiled(i).backward()
            (emb(i) * 3).pow(2).sum().backward()
            assert_same(twin.weight.grad, emb.weight.grad)
    finally:
        ember.logs.set_logs()
    assert "index_put" not in capfd.readouterr().err  # a generated scatter kernel, not an extern call


def test_scatter_graphs_run_on_the_generated_wrapper_and_its_graph_cache(monkeypatch, tmp_path):
    from ember.inductor import config, fx_graph_cache
    from ember.inductor.wrapper import CompiledGraph

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "fx_graph_cache", True)

    def fn(x, i, v):
        return x.index_put((i,), v, accumulate=True) * 2

    x, i, v = ember.randn(5, 3), ember.tensor([0, 4, 4]), ember.randn(3, 3)
    hits = fx_graph_cache.stats["hits"]
    for _ in range(2):  # compiled, then loaded from the graph cache
        compiled, rec = compile_with_inductor(fn)
        assert_same(compiled(x, i, v), fn(x, i, v))
        assert isinstance(rec.graphs[0], CompiledGraph)
    assert fx_graph_cache.stats["hits"] == hits + 1
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 5"):
        compiled(x, ember.tensor([0, 9, 1]), v)
