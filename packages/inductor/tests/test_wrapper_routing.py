"""Which wrapper runs a graph: the generated one (memory planning, the graph cache, kernels built in
parallel) for graphs of static sizes whose steps are kernels and eager ops, the step wrapper for
symbolic sizes, scans, random state, stores into inputs and the check mode; and the graph cache key
follows every setting that changes the generated code."""

from __future__ import annotations

import sys

import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
from ember.aot import config as aot_config
from ember.inductor import config, fx_graph_cache
from ember.inductor.lowering_random import RngGraph
from ember.inductor.wrapper import CompiledGraph
from ember.inductor.wrapper_steps import StepGraph


@pytest.fixture
def inner_graphs(monkeypatch):
    """Every graph ``compile_fx`` compiles (through ``compile_fx_inner``), as compiled."""
    cfx = sys.modules["ember.inductor.compile_fx"]
    real, graphs = cfx.compile_fx_inner, []

    def record(gm, inputs, **kwargs):
        graphs.append(real(gm, inputs, **kwargs))
        return graphs[-1]

    monkeypatch.setattr(cfx, "compile_fx_inner", record)
    monkeypatch.setattr(aot_config, "enable_autograd_cache", False)  # every graph is compiled, none loaded
    ember.compiler.reset()
    yield graphs
    ember.compiler.reset()


def _cache_traffic() -> int:
    return fx_graph_cache.stats["hits"] + fx_graph_cache.stats["misses"] + fx_graph_cache.stats["stores"]


def test_a_static_graph_runs_on_the_generated_wrapper_with_combo_kernels(monkeypatch):
    monkeypatch.setattr(config, "combo_kernels", True)

    def fn(x, y):
        return (x * 2).sum(-1), (y.exp() + 1).amax(0)  # two independent groups: one combo kernel

    x, y = ember.randn(8, 16), ember.randn(5, 3)
    compiled, rec = compile_with_inductor(fn)
    for got, want in zip(compiled(x, y), fn(x, y), strict=True):
        assert_same(got, want, rtol=1e-5, atol=1e-6)
    (graph,) = rec.graphs
    assert isinstance(graph, CompiledGraph) and graph.kernel_count == 1
    assert "def call(args, arrays):" in graph.wrapper_source


def test_symbolic_sizes_run_on_the_step_wrapper():
    from ember.aot.aot_autograd import aot_function
    from ember.aot.backends import core_decompositions
    from ember.inductor.compile_fx import compile_fx_inner

    graphs = []

    def compiler(gm, inputs):
        graphs.append(compile_fx_inner(gm, inputs))
        return graphs[-1]

    before = _cache_traffic()
    fn = aot_function(lambda x: (x * 2).sum(-1), fw_compiler=compiler, decompositions=core_decompositions(),
                      dynamic=True)  # fmt: skip
    for n in (5, 9):
        x = ember.randn(n, 4)
        assert_same(fn(x), (x * 2).sum(-1), rtol=1e-5, atol=1e-6)
    assert len(graphs) == 1 and isinstance(graphs[0], StepGraph) and graphs[0].binder is not None
    assert _cache_traffic() == before


def test_scans_run_on_the_step_wrapper_and_random_draws_on_the_generated_one(inner_graphs):
    x = ember.randn(6, 5)
    got = ember.compile(lambda t: t.cumsum(0) * 2)(x)
    assert_same(got, x.cumsum(0) * 2, rtol=1e-5, atol=1e-5)
    assert isinstance(inner_graphs[-1], StepGraph)
    ember.manual_seed(3)
    drawn = ember.compile(lambda t: t + ember.rand_like(t))(x)
    ember.manual_seed(3)
    assert_same(drawn, x + ember.rand_like(x), rtol=1e-6, atol=1e-6)
    graph = inner_graphs[-1]
    # the seed and offset are one-element buffers of the generated wrapper (and the graph cache keeps it)
    assert isinstance(graph, RngGraph) and isinstance(graph.compiled, CompiledGraph)


def test_stores_into_inputs_keep_the_inputs_memory(inner_graphs):
    def step(p, m, g):
        m.mul_(0.9).add_(g)
        p.sub_(m * 0.1)

    p, m, g = ember.randn(300), ember.randn(300), ember.randn(300)
    p_want, m_want = p.clone(), m.clone()
    step(p_want, m_want, g)
    pointers = (p.data_ptr(), m.data_ptr())
    with ember.no_grad():
        ember.compile(step)(p, m, g)
    assert (p.data_ptr(), m.data_ptr()) == pointers
    assert_same(p, p_want, rtol=1e-6, atol=1e-6)
    assert_same(m, m_want, rtol=1e-6, atol=1e-6)
    assert isinstance(inner_graphs[-1], CompiledGraph)  # the generated wrapper: the graph cache keeps it


def test_the_check_mode_runs_on_the_step_wrapper_and_is_not_cached(inner_graphs):
    before = _cache_traffic()
    x = ember.randn(4, 7)
    got = ember.compile(lambda t: (t.sin() * 3).sum(0), options={"check": True})(x)
    assert_same(got, (x.sin() * 3).sum(0), rtol=1e-5, atol=1e-5)
    assert inner_graphs and all(isinstance(g, StepGraph) for g in inner_graphs)
    assert _cache_traffic() == before


def test_max_autotune_graphs_are_not_cached(monkeypatch, tmp_path):
    from ember.inductor import autotune

    monkeypatch.setattr(autotune, "cache_folder", lambda: str(tmp_path))
    monkeypatch.setattr(config, "max_autotune", True)
    monkeypatch.setattr(config, "max_autotune_gemm_budget", 5.0)
    monkeypatch.setattr(config, "max_autotune_gemm_runs", 1)
    autotune.clear_memo()
    before = _cache_traffic()
    a, b = ember.randn(6, 5), ember.randn(5, 4)
    compiled, rec = compile_with_inductor(lambda x, y: (x @ y).relu())
    assert_same(compiled(a, b), (a @ b).relu(), rtol=1e-5, atol=1e-5)
    autotune.clear_memo()
    assert rec.graphs and _cache_traffic() == before


def test_frozen_graphs_are_not_cached(inner_graphs, monkeypatch):
    monkeypatch.setattr(config, "freezing", True)
    ember.manual_seed(0)
    m = ember.nn.Linear(6, 3).eval()
    x = ember.randn(2, 6)
    before = _cache_traffic()
    with ember.no_grad():
        got = ember.compile(m)(x)
        want = m(x)
    assert_same(got, want, rtol=1e-5, atol=1e-6)
    assert inner_graphs and _cache_traffic() == before


@pytest.mark.parametrize(
    ("where", "name", "value"),
    [
        ("config", "max_group_buffers", 5),
        ("config", "combo_kernels", False),
        ("config", "fallback_random", True),
        ("config", "freezing", True),
        ("cpp", "grain", 1024),
        ("cpp", "reduction_chunk", 512),
        ("cpp", "min_parallel_rows", 3),
        ("cpp", "parallel_threshold", 10),
        ("cpp", "max_local_bytes", 8),
    ],
)
def test_the_cache_key_follows_the_code_generators_settings(monkeypatch, where, name, value):
    from ember.fx import symbolic_trace

    gm = symbolic_trace(lambda x: x * 2)
    x = ember.randn(3, 4)
    before = fx_graph_cache.graph_key(gm, [x])
    monkeypatch.setattr(config if where == "config" else config.cpp, name, value)
    assert fx_graph_cache.graph_key(gm, [x]) != before


@pytest.mark.parametrize("n_threads", [1, 2])
def test_column_reductions_on_the_thread_pool(n_threads):
    """A reduction over two outer dims of a row-major buffer (not a lone tiled loop): blocks of
    outputs handed to the pool when there is work enough, the same values on any thread count."""
    before = ember.get_num_threads()
    ember.set_num_threads(n_threads)
    try:
        x = ember.randn(4, 60, 300)
        compiled, rec = compile_with_inductor(lambda t: t.sum((0, 1)))
        assert_same(compiled(x), x.sum((0, 1)), rtol=1e-4, atol=1e-4)
    finally:
        ember.set_num_threads(before)
    source = rec.graphs[0].source
    assert "a column reduction" in source and "ember_parallel(0, 5, 1" in source


def test_extern_results_with_other_strides_are_laid_out_for_the_kernels_at_symbolic_sizes():
    """Attention stays one extern call; its eager kernel may lay its output out otherwise than its meta
    kernel says. The step wrapper copies such a result to the traced strides before a kernel reads it."""
    from ember.aot.aot_autograd import aot_function
    from ember.inductor.compile_fx import _inductor_decompositions, compile_fx_inner

    def fn(q, k, v):
        heads = [t.view(t.shape[0], t.shape[1], 4, 8).transpose(1, 2) for t in (q, k, v)]
        out = ember.nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
        return out * 2

    graphs = []

    def compiler(gm, inputs):
        graphs.append(compile_fx_inner(gm, inputs))
        return graphs[-1]

    compiled = aot_function(fn, fw_compiler=compiler, decompositions=_inductor_decompositions(), dynamic=True)
    for t in (16, 12):
        q, k, v = (ember.randn(2, t, 32) for _ in range(3))
        assert_same(compiled(q, k, v), fn(q, k, v), rtol=1e-5, atol=1e-5)
    assert isinstance(graphs[0], StepGraph)


def test_nn_lowerings_over_symbolic_sizes_match_eager():
    """Batch norm, max pooling, gather and cat over a dynamic batch: eager calls where the lowering is
    written for static sizes, kernels where it serves every size."""
    from ember.aot.aot_autograd import aot_function
    from ember.inductor.compile_fx import _inductor_decompositions, compile_fx_inner

    F = ember.nn.functional

    def fn(x, idx):
        y = F.batch_norm(x, None, None, training=True)
        pooled = F.max_pool2d(y, 2)
        flat = pooled.flatten(1)
        return ember.cat([flat, flat * 2], 1).gather(1, idx)

    graphs = []

    def compiler(gm, inputs):
        graphs.append(compile_fx_inner(gm, inputs))
        return graphs[-1]

    compiled = aot_function(fn, fw_compiler=compiler, decompositions=_inductor_decompositions(), dynamic=True)
    for n in (3, 5):
        x, idx = ember.randn(n, 2, 4, 4), ember.randint(0, 16, (n, 7))
        assert_same(compiled(x, idx), fn(x, idx), rtol=1e-4, atol=1e-5)
    assert len(graphs) == 1 and isinstance(graphs[0], StepGraph)


def test_an_input_written_in_place_must_come_with_the_strides_it_was_compiled_for():
    """The generated wrapper copies an input of other strides to the kernels' layout; an input the
    kernels write cannot be copied (the stores would not reach the caller's tensor): a clear error."""
    from ember.aot.aot_autograd import aot_function
    from ember.aot.backends import core_decompositions
    from ember.inductor.compile_fx import compile_fx_inner

    def step(p, g):
        p.sub_(g * 0.5)

    graphs = []

    def compiler(gm, inputs):
        graphs.append(compile_fx_inner(gm, inputs))
        return graphs[-1]

    fn = aot_function(step, fw_compiler=compiler, decompositions=core_decompositions(),
                      keep_inference_input_mutations=True)  # fmt: skip
    p, g = ember.randn(4, 6), ember.randn(4, 6)
    want = p - g * 0.5
    with ember.no_grad():
        fn(p, g)
    assert_same(p, want)
    assert isinstance(graphs[-1], CompiledGraph)
    transposed = ember.randn(6, 4).t()
    with pytest.raises(RuntimeError, match="writes arg0 in place"):
        graphs[-1]([transposed, g])
