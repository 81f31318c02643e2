"""Indirect loads and scatters compiled against eager only (no oracle needed): bounds errors, empty
index tensors, determinism of accumulation across thread counts, fusion of an embedding with the ops
after it, dynamic sizes, the generated wrapper and its graph cache, and GPT training."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember

OUT_OF_RANGE = {
    "embedding": (lambda w, i: ember.nn.functional.embedding(i, w), 9),
    "embedding_negative": (lambda w, i: ember.nn.functional.embedding(i, w), -1),
    "index_select": (lambda w, i: w.index_select(0, i) + 1, 9),
    "gather": (lambda w, i: w.gather(0, i.reshape(2, 1).expand(2, 3)) + 1, 9),
    "index": (lambda w, i: w[i] + 1, 9),
    "index_negative": (lambda w, i: w[i] + 1, -10),
    "index_put": (lambda w, i: w.index_put((i,), ember.ones(2, 3)), 9),
    "index_put_accumulate": (lambda w, i: w.index_put((i,), ember.ones(2, 3), accumulate=True), -10),
    "scatter": (lambda w, i: w.scatter(0, i.reshape(2, 1).expand(2, 3), ember.ones(2, 3)), 9),
    "scatter_add_negative": (lambda w, i: w.scatter_add(0, i.reshape(2, 1).expand(2, 3), ember.ones(2, 3)), -1),
    "scatter_value": (lambda w, i: w.scatter(1, i.reshape(1, 2), 2.5), 3),
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


ACCUMULATIONS = {
    "index_put": lambda x, i, v: x.index_put((i,), v, accumulate=True),
    # every column of the index says its own rows: the duplicates of a column are summed in index order
    "scatter_add": lambda x, i, v: x.scatter_add(0, i.reshape(-1, 1).expand(-1, 4096) % 16, v),
}


@pytest.mark.parametrize("op", ACCUMULATIONS)
def test_accumulation_with_duplicates_is_the_same_bits_on_any_thread_count(threads, op):
    rng = np.random.default_rng(6)
    # large enough for parallel loops; every row hit many times
    x = ember.tensor(rng.standard_normal((16, 4096)).astype(np.float32))
    idx = ember.tensor(rng.integers(0, 16, size=(300,)))
    v = ember.tensor(rng.standard_normal((300, 4096)).astype(np.float32) * 1e3)
    fn = ACCUMULATIONS[op]
    compiled, rec = compile_with_inductor(fn)
    results = []
    for n in (1, 2, 3):
        threads(n)
        results.append(compiled(x, idx, v).numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    want = fn(x, idx, v).numpy()
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-2)
    assert not any("scatter" in str(target) for g in rec.graphs for target, _ in g.fallbacks)


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


def test_hoisting_moves_what_does_not_depend_on_the_inner_loop():
    from ember.inductor.codegen_cpp import _hoist

    body = [
        "auto n0_t1 = static_cast<int64_t>(a0[x0]);",
        "int64_t ind_n0_2 = static_cast<int64_t>(n0_t1); if (ind_n0_2 < 0) ind_n0_2 += 10;",
        "auto n0_t3 = static_cast<float>(a1[(x1 + (8 * ind_n0_2))]);",
        "auto n0_t4 = static_cast<float>(a2[x0]);",
        "auto n0_t5 = (n0_t3 + n0_t4);",
        "a3[(x1 + (8 * x0))] = static_cast<float>(n0_t5);",
    ]
    hoisted, kept = _hoist(body, "x1")
    assert hoisted == [body[0], body[1], body[3]]
    assert kept == [body[2], body[4], body[5]]
    # an index that depends on the inner loop (a gather along it) stays in the loop, with all it feeds
    hoisted, kept = _hoist(body, "x0")
    assert hoisted == [] and kept == body


def test_error_codes_name_the_exception_and_the_dimension():
    from ember.inductor import indirect

    err = indirect.index_error(indirect.error_code(indirect.GATHER, 2))
    assert isinstance(err, RuntimeError) and "dimension 2" in str(err)
    err = indirect.index_error(indirect.error_code(indirect.ADVANCED, 1))
    assert isinstance(err, IndexError) and "dimension 1" in str(err)
    assert str(indirect.index_error(indirect.error_code(indirect.EMBEDDING, 0))) == "index out of range in self"
