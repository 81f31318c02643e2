"""The generated wrapper (memory planning, the small-buffer arena, threads), the kernels built in
parallel, and the whole-graph disk cache: a warm start in a new process compiles nothing."""

from __future__ import annotations

import textwrap
import threading

import pytest
from inductor_testing import assert_same, compile_with_inductor, run_in_new_process

import ember
from ember.inductor import compile_workers, config, wrapper


def _chain(x, w):
    # each GEMM reads a kernel's output, so every softmax is a buffer of its own, all of one size
    for _ in range(4):
        x = ember.softmax(x @ w, -1) * 2
    return x.sum(0)


@pytest.fixture
def counted_empty(monkeypatch):
    calls = []
    real = wrapper.empty

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(wrapper, "empty", counting)
    monkeypatch.setattr(config, "wrapper_arena_bytes", 0)
    return calls


def test_memory_planning_reuses_storage_and_changes_no_result(monkeypatch, counted_empty):
    monkeypatch.setattr(config, "fx_graph_cache", False)
    x, w = ember.randn(16, 32), ember.randn(32, 32) / 4
    counts = {}
    for planning in (False, True):
        monkeypatch.setattr(config, "memory_planning", planning)
        compiled, rec = compile_with_inductor(_chain)
        compiled(x, w)
        counted_empty.clear()
        assert_same(compiled(x, w), _chain(x, w), rtol=1e-5, atol=1e-6)
        counts[planning] = len(counted_empty)
        assert counts[planning] == rec.graphs[0].allocations
    # every softmax realizes its max, its sum and itself, all dead once the next GEMM has run: with
    # planning, later ones take the storage of earlier ones
    assert counts[True] <= counts[False] // 2, counts


def test_an_output_never_gives_its_storage_away(monkeypatch):
    monkeypatch.setattr(config, "wrapper_arena_bytes", 0)
    monkeypatch.setattr(config, "fx_graph_cache", False)

    def fn(x, w):
        a = ember.softmax(x @ w, -1)
        b = ember.softmax(a @ w, -1)
        c = ember.softmax(b @ w, -1)
        return a, c

    x, w = ember.randn(8, 8), ember.randn(8, 8)
    compiled, _ = compile_with_inductor(fn)
    for got, want in zip(compiled(x, w), fn(x, w), strict=True):
        assert_same(got, want, rtol=1e-5, atol=1e-6)


def test_small_internal_buffers_live_in_the_graphs_arena(monkeypatch, counted_empty):
    monkeypatch.setattr(config, "wrapper_arena_bytes", 1 << 20)
    monkeypatch.setattr(config, "fx_graph_cache", False)
    x, w = ember.randn(16, 32), ember.randn(32, 32) / 4
    compiled, rec = compile_with_inductor(_chain)
    compiled(x, w)
    graph = rec.graphs[0]
    assert graph.arena and graph.allocations == 1  # the returned sum alone is allocated per call
    counted_empty.clear()
    first = compiled(x, w)
    second = compiled(x * 2, w)
    assert len(counted_empty) == 2
    assert_same(first, _chain(x, w), rtol=1e-5, atol=1e-6)
    assert_same(second, _chain(x * 2, w), rtol=1e-5, atol=1e-6)


def test_calls_from_several_threads_get_their_own_results():
    x, w = ember.randn(16, 32), ember.randn(32, 32) / 4
    compiled, _ = compile_with_inductor(_chain)
    inputs = [x * (i + 1) for i in range(4)]
    results: dict[int, object] = {}

    def run(i):
        for _ in range(20):
            results[i] = compiled(inputs[i], w)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert_same(results[i], _chain(inputs[i], w), rtol=1e-5, atol=1e-6)


def test_kernels_split_across_libraries_built_at_once(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "compile_threads", 3)
    monkeypatch.setattr(config, "fx_graph_cache", False)
    x, w = ember.randn(16, 32), ember.randn(32, 32) / 4
    compiled, rec = compile_with_inductor(_chain)
    assert_same(compiled(x, w), _chain(x, w), rtol=1e-5, atol=1e-6)
    libraries = {s.library for s in rec.graphs[0].steps if isinstance(s, wrapper.KernelStep)}
    assert len(libraries) == 3
    assert len(list(tmp_path.rglob("*.so"))) == 3


def test_split_is_deterministic_and_keeps_every_kernel():
    from ember.inductor.codegen_cpp import KernelSpec

    specs = [KernelSpec(f"kernel{i}", "x" * (10 * i + 1), [], [], []) for i in range(7)]
    groups = compile_workers.split(specs, 3)
    assert groups == compile_workers.split(specs, 3)
    assert sorted(s.name for g in groups for s in g) == sorted(s.name for s in specs)
    assert len(groups) == 3
    assert len(compile_workers.split(specs[:2], 8)) == 2  # never more groups than kernels


WARM_START = textwrap.dedent(
    """
    import json
    import ember
    from ember.inductor import cpp_builder, fx_graph_cache
    from ember.inductor.graph import GraphLowering

    lowered = []
    run = GraphLowering.run
    GraphLowering.run = lambda self: (lowered.append(1), run(self))[1]

    def fn(x, w):
        return (ember.softmax(x @ w, -1) * x).sum()

    x, w = ember.ones(4, 8, requires_grad=True), ember.ones(8, 8)
    compiled = ember.compile(fn, backend="inductor")
    loss = compiled(x, w)
    loss.backward()
    print(json.dumps({"compiles": cpp_builder.stats["compiles"], "lowered": len(lowered),
                      "hits": fx_graph_cache.stats["hits"], "loss": float(loss), "grad": x.grad.sum().item()}))
    """
)


def test_a_warm_start_in_a_new_process_compiles_nothing(tmp_path):
    cold = run_in_new_process(WARM_START, tmp_path)
    assert cold["compiles"] >= 1 and cold["lowered"] == 2 and cold["hits"] == 0  # forward and backward
    warm = run_in_new_process(WARM_START, tmp_path)
    assert warm["compiles"] == 0 and warm["lowered"] == 0 and warm["hits"] == 2
    assert (warm["loss"], warm["grad"]) == (cold["loss"], cold["grad"])
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]  # no temporary left behind


def test_the_cache_key_follows_inputs_and_settings(monkeypatch):
    from ember.fx import symbolic_trace
    from ember.inductor import fx_graph_cache

    gm = symbolic_trace(lambda x: x * 2)
    a = fx_graph_cache.graph_key(gm, [ember.randn(3, 4)])
    assert a == fx_graph_cache.graph_key(gm, [ember.randn(3, 4)])
    assert a != fx_graph_cache.graph_key(gm, [ember.randn(4, 3)])
    assert a != fx_graph_cache.graph_key(gm, [ember.randn(4, 3).t()])
    assert a != fx_graph_cache.graph_key(gm, [ember.randn(3, 4, dtype=ember.float64)])
    monkeypatch.setattr(config, "realize_ops_threshold", 7)
    assert a != fx_graph_cache.graph_key(gm, [ember.randn(3, 4)])


def test_inductor_logs_report_the_kernels_compiled_and_the_time(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    ember.logs.set_logs(spec="+inductor")
    try:
        x, w = ember.randn(16, 32), ember.randn(32, 32)
        compiled, _ = compile_with_inductor(_chain)
        compiled(x, w)
        compiled2, _ = compile_with_inductor(_chain)
        compiled2(x, w)
    finally:
        ember.logs.set_logs()
    err = capfd.readouterr().err
    assert "kernels in" in err and "compiled, 0 from the disk cache" in err
    assert "(lowering and scheduling" in err and "compiler" in err
    assert "from the disk cache" in err and "loaded a compiled graph" in err


@pytest.mark.parametrize("kind", ["tensors", "parameters"])
def test_a_kernel_of_many_tensors_gets_their_pointers_in_one_call(kind):
    """A kernel reading a dozen tensors has its pointer array filled by one C call (a subclass, as a
    Parameter, by each tensor's ``data_ptr()``): the same values either way."""
    xs = [ember.randn(5, 3) for _ in range(12)]
    if kind == "parameters":
        xs = [ember.nn.Parameter(x, requires_grad=False) for x in xs]

    def fn(*ts):
        out = ts[0] * 1.0
        for i, t in enumerate(ts[1:]):
            out = out + t * float(i + 2)
        return out

    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(*xs), fn(*xs))
    (graph,) = rec.graphs
    assert "fill_pointers(" in graph.wrapper_source
