"""Kernels over symbolic sizes: one compiled graph serves every size of a dynamic dimension.

Each compiled function is checked against eager at every size, and the compiles are counted at the
backend (graphs dynamo hands over) and at the code generator (graphs lowered to kernels).
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inductor_testing import assert_same

import ember
import ember.inductor.compile_fx
from ember.aot import config as aot_config
from ember.aot.aot_autograd import aot_function
from ember.aot.backends import core_decompositions
from ember.dynamo.testing import CompileCounterWithBackend
from ember.inductor import cpp_builder
from ember.inductor.wrapper_steps import KernelStep

compile_fx_module = sys.modules["ember.inductor.compile_fx"]  # the module (the package exports the function)


@pytest.fixture
def lowered(monkeypatch):
    """Counts the graphs lowered to kernels (forward and backward each count)."""
    count = {"graphs": 0}
    inner = compile_fx_module.compile_fx_inner

    def counting(gm, example_inputs):
        count["graphs"] += 1
        return inner(gm, example_inputs)

    monkeypatch.setattr(compile_fx_module, "compile_fx_inner", counting)
    # every graph goes through AOT autograd to the code generator: no program from the disk cache
    monkeypatch.setattr(aot_config, "enable_autograd_cache", False)
    return count


def _inputs(n, dtype=ember.float32):
    if dtype == ember.int64:
        return ember.randint(-50, 50, (n, 4)), ember.randint(-50, 50, (4,))
    return ember.randn(n, 4), ember.randn(4)


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64])
def test_dynamic_true_compiles_once_for_every_size(lowered, dtype):
    def fn(x, w):
        return (x * 3 + w).sum(1), x - x.sum(0) + w * 2

    counter = CompileCounterWithBackend("inductor")
    compiled = ember.compile(fn, backend=counter, dynamic=True)
    for n in (1, 3, 5, 17, 1000):
        x, w = _inputs(n, dtype)
        for got, want in zip(compiled(x, w), fn(x, w), strict=True):
            assert_same(got, want, rtol=1e-5, atol=1e-3)
    # size 1 is specialized (as PyTorch does); 3 and every later size share one graph and its kernels
    assert counter.frame_count == 2
    assert lowered["graphs"] == 2


def test_automatic_dynamic_recompiles_once(lowered):
    def fn(x):
        return ember.softmax(x * 2, -1) + x.mean(0)

    counter = CompileCounterWithBackend("inductor")
    compiled = ember.compile(fn, backend=counter)
    counts = []
    for n in (4, 6, 9, 30):
        x = ember.randn(n, n + 1)
        assert_same(compiled(x), fn(x), rtol=1e-5, atol=1e-5)
        counts.append((counter.frame_count, lowered["graphs"]))
    assert counts == [(1, 1), (2, 2), (2, 2), (2, 2)]


def test_mark_dynamic(lowered):
    def fn(x):
        return (x.exp() * x).amax(0)

    counter = CompileCounterWithBackend("inductor")
    compiled = ember.compile(fn, backend=counter)
    x = ember.randn(7, 3)
    ember._dynamo.mark_dynamic(x, 0)
    assert_same(compiled(x), fn(x))
    for n in (2, 11, 40):
        x = ember.randn(n, 3)
        assert_same(compiled(x), fn(x))
    assert (counter.frame_count, lowered["graphs"]) == (1, 1)


def _check_sizes(fn, make, sizes=(3, 5, 9, 33), rtol=1e-5, atol=1e-5):
    counter = CompileCounterWithBackend("inductor")
    compiled = ember.compile(fn, backend=counter, dynamic=True)
    for n in sizes:
        args = make(n)
        got, want = compiled(*args), fn(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,),
                        strict=True):  # fmt: skip
            assert_same(g, w, rtol=rtol, atol=atol)
    assert counter.frame_count == 1
    return compiled


def test_pointwise_broadcasting_over_a_dynamic_dim(lowered):
    def fn(x, row, col):
        return ember.where(x > 0, x * row, col - x) + 1.5

    _check_sizes(fn, lambda n: (ember.randn(n, 6), ember.randn(6), ember.randn(n, 1)))
    assert lowered["graphs"] == 1


def test_views_with_symbolic_shapes(lowered):
    def fn(x):
        a = x.reshape(x.shape[0], 2, 3).transpose(0, 2)  # (3, 2, n)
        b = x.view(-1)[2:] * 2  # a slice of a flattened dynamic dim
        c = x[1:, ::2] + x[:-1, 1::2]  # slices along the dynamic dim
        return a * 1.0, b.sum(), c, x.t().contiguous()

    _check_sizes(fn, lambda n: (ember.randn(n, 6),))
    assert lowered["graphs"] == 1


def test_sizes_as_values(lowered):
    def fn(x):
        n = x.size(0)
        return x.view(n, -1).sum(1) * n + x.new_full((n * 2,), 3.0).sum()

    _check_sizes(fn, lambda n: (ember.randn(n, 2, 4),))
    assert lowered["graphs"] == 1


def _views_of_the_input(x):
    return x[1:], x.t(), x.view(-1)


def _extern_and_fallback_ops(x, w):
    return (x @ w).relu(), ember.cumsum(x, 0) * 2, ember.nn.functional.pad(x, (1, 2)) + 1


def _factories(x):
    return x + ember.arange(x.shape[0]).unsqueeze(1), ember.zeros(x.shape[0], 2), ember.ones_like(x)


def _cat_and_stack(x):
    return ember.cat([x, x[1:]], 0) * 2, ember.stack([x, x]).sum(0)


def _negative_indexes(x):
    return x[-1] + x[0], x[:, -1], x[-2:, :].sum()


def _expand(x):
    return x.expand(3, -1, -1) + x.unsqueeze(0), x.unsqueeze(1).expand(-1, 5, -1).sum(1)


def _merged_dims(x):
    return x.reshape(-1, 4).sum(0) + x.flatten()[-1]


def _sizes_in_float_math(x):
    return x / x.shape[0] + x * (x.shape[1] / 2), x.mean(0) * x.shape[0]


def _integer_math(x):
    return (x // 3 + x % 5) * x.shape[0], x.amax(0), (x > 2).sum(1)


@pytest.mark.parametrize(
    ("fn", "make"),
    [
        (_views_of_the_input, lambda n: (ember.randn(n, 4),)),
        (_extern_and_fallback_ops, lambda n: (ember.randn(n, 4), ember.randn(4, 6))),
        (_factories, lambda n: (ember.randn(n, 4),)),
        (_cat_and_stack, lambda n: (ember.randn(n, 4),)),
        (_negative_indexes, lambda n: (ember.randn(n, 4),)),
        (_expand, lambda n: (ember.randn(n, 4),)),
        (_merged_dims, lambda n: (ember.randn(n, 2, 2),)),
        (_integer_math, lambda n: (ember.randint(0, 100, (n, 6)),)),
        (_sizes_in_float_math, lambda n: (ember.randn(n, 4),)),
    ],
    ids=lambda v: getattr(v, "__name__", "")[1:] or None,
)
def test_more_ops_over_a_dynamic_dim(fn, make):
    _check_sizes(fn, make, sizes=(3, 5, 40))


def test_reductions_over_dynamic_dims(lowered):
    def fn(x):
        return (
            x.sum(0),
            x.mean(-1),
            x.amax(0),
            x.var(0),
            x.argmax(0),
            x.sum(),
        )

    _check_sizes(fn, lambda n: (ember.randn(n, n + 2),), sizes=(3, 6, 20, 200), rtol=1e-4, atol=1e-4)
    assert lowered["graphs"] == 1


def test_softmax_over_a_dynamic_last_dim(lowered):
    def fn(x, b):
        return ember.softmax(x + b, -1), ember.log_softmax(x, 0), ember.softmax(x, 0)

    _check_sizes(fn, lambda n: (ember.randn(5, n), ember.randn(n)), sizes=(3, 7, 64, 1025), rtol=1e-4, atol=1e-5)
    assert lowered["graphs"] == 1


def test_layer_norm_over_a_dynamic_last_dim():
    # through AOT autograd directly: F.layer_norm refuses a symbolic normalized_shape under dynamo
    def fn(x, w, b):
        return ember.ops.aten.native_layer_norm.default(x, [x.shape[-1]], w, b, 1e-5)

    compiled, graphs = _aot(fn)
    for n in (3, 7, 64, 1025):
        x, w, b = ember.randn(6, n), ember.randn(n), ember.randn(n)
        for got, want in zip(compiled(x, w, b), fn(x, w, b), strict=True):
            assert_same(got, want, rtol=1e-4, atol=1e-5)
    assert len(graphs) == 1


def test_forward_and_backward_with_a_dynamic_batch(lowered):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(6, 8), ember.nn.GELU(), ember.nn.LayerNorm(8), ember.nn.Linear(8, 3))
    counter = CompileCounterWithBackend("inductor")
    compiled = ember.compile(model, backend=counter, dynamic=True)
    for n in (2, 5, 12, 40):  # sizes equal to a parameter's (3, 6, 8) are traced apart
        x = ember.randn(n, 6)
        model.zero_grad()
        want = model(x).square().mean()
        want.backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        got = compiled(x).square().mean()
        got.backward()
        assert_same(got, want, rtol=1e-5, atol=1e-6)
        for p, g in zip(model.parameters(), grads, strict=True):
            assert_same(p.grad, g, rtol=1e-4, atol=1e-5)
    assert counter.frame_count == 1
    assert lowered["graphs"] == 2  # one forward and one backward graph for every batch size


def _aot(fn):
    graphs = []

    def compiler(gm, example_inputs):
        graphs.append(compile_fx_module.compile_fx_inner(gm, example_inputs))
        return graphs[-1]

    return aot_function(fn, fw_compiler=compiler, decompositions=core_decompositions(), dynamic=True), graphs


def _aot_dynamic(fn, *args):
    compiled, graphs = _aot(fn)
    compiled(*args)
    return graphs[0]


def test_one_kernel_source_for_every_size():
    def fn(x):
        return (x * 2).sum(-1)

    graph = _aot_dynamic(fn, ember.randn(5, 7))
    before = dict(cpp_builder.stats)
    # traced again at other sizes: the same source, so the same disk-cache entry (no compile)
    assert "s0" in graph.source and graph.source == _aot_dynamic(fn, ember.randn(40, 3)).source
    assert cpp_builder.stats["compiles"] == before["compiles"]
    for n, m in ((2, 3), (9, 4), (50, 100)):
        x = ember.randn(n, m)
        (out,) = graph([x])
        assert_same(out, (x * 2).sum(-1), rtol=1e-5, atol=1e-5)


def test_inputs_with_other_strides_are_copied_to_the_kernels_layout():
    graph = _aot_dynamic(lambda x: x.exp() + x.sum(0), ember.randn(5, 4))
    x = ember.randn(9, 7).t()  # (7, 9), strides (1, 7)
    (out,) = graph([x])
    assert_same(out, x.exp() + x.sum(0), rtol=1e-5, atol=1e-5, check_strides=False)
    with pytest.raises(RuntimeError, match=r"expected arg0 with 2 dims of .*int64"):
        graph([ember.ones(7, 9, dtype=ember.int64)])


def test_loops_go_parallel_when_the_run_time_size_is_large_enough():
    def fn(x):
        return x.sum(), x.amax(), x.argmax(), (x * 2).exp().sum(1), x.var()

    graph = _aot_dynamic(fn, ember.randn(3, 1000))
    assert "ember_parallel(" in graph.source  # the pool runs a short range inline
    for n in (2, 5, 70, 300):  # 2 000 to 300 000 elements: below and above the parallel threshold
        x = ember.randn(n, 1000)
        for got, want in zip(graph([x]), fn(x), strict=True):
            assert_same(got, want, rtol=1e-4, atol=1e-3)


def test_a_broken_assumption_is_a_clear_error():
    # traced with two equal sizes (one symbol) and no size 1: other inputs break those assumptions
    graph = _aot_dynamic(lambda x, y: x * 2 + y.sum(), ember.randn(5, 3), ember.randn(5))
    x, y = ember.randn(8, 3), ember.randn(8)
    (out,) = graph([x, y])
    assert_same(out, x * 2 + y.sum(), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match=r"arg1.size\(0\) == s0 does not hold"):
        graph([ember.randn(8, 3), ember.randn(9)])
    with pytest.raises(RuntimeError, match=r"s0 >= 2 does not hold"):
        graph([ember.randn(1, 3), ember.randn(1)])
    # a divisibility the view's meta kernel guarded
    graph = _aot_dynamic(lambda x: x.view(-1, 2).sum(1), ember.randn(10))
    x = ember.randn(12)
    assert_same(graph([x])[0], x.view(-1, 2).sum(1), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match=r"Eq\(Mod\(s0, 2\), 0\) does not hold"):
        graph([ember.randn(7)])


def test_a_kernel_called_with_a_layout_it_does_not_support_raises():
    graph = _aot_dynamic(lambda x: x * 2, ember.randn(5, 4))
    (step,) = [s for s in graph.steps if isinstance(s, KernelStep)]
    values, _ = graph.binder.bind([ember.randn(6, 4)])
    with pytest.raises(RuntimeError, match=r"specialized for arg0 .*\(1, 6\).*strides \(s1, 1\)"):
        step({"": values, "arg0": ember.randn(4, 6).t()})  # called directly: no copy to the expected layout


# random graphs over (n, n) inputs, traced once and called with other n (views read n from the shapes)
UNARY = [lambda t: t.exp() * 0.1, lambda t: t.tanh(), lambda t: t.abs().sqrt(), lambda t: -t]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: ember.maximum(a, b), lambda a, b: a - b * 0.5]
VIEWS = [
    lambda t: t.t(),
    lambda t: t.t().reshape(-1).reshape(t.shape[0], -1),
    lambda t: t[:, :1].expand(t.shape[0], t.shape[1]),
    lambda t: t[1:, :-1].contiguous().view(-1)[:1].expand(t.shape[0], t.shape[1]) + t,
    lambda t: ember.cat([t[:, 1:], t[:, :1]], 1),
]
REDUCE = [
    lambda t: t.sum(-1, keepdim=True),
    lambda t: t.amax(0, keepdim=True),
    lambda t: t.mean(-1, keepdim=True),
    lambda t: t.var(-1, keepdim=True),
    lambda t: ember.softmax(t, -1),
    lambda t: ember.softmax(t, 0),
]
STEP = st.tuples(st.sampled_from(["unary", "binary", "view", "reduce"]), st.integers(0, 100), st.integers(0, 100))


def _random_program(program):
    def fn(x, y):
        vals = [x, y]
        for kind, a, b in program:
            u = vals[a % len(vals)]
            if kind == "unary":
                v = UNARY[b % len(UNARY)](u)
            elif kind == "binary":
                v = BINARY[a % len(BINARY)](u, vals[b % len(vals)])
            elif kind == "view":
                v = VIEWS[b % len(VIEWS)](u)
            else:
                v = REDUCE[b % len(REDUCE)](u) + u
            vals.append(v)
        return tuple(vals[2:])

    return fn


@settings(
    max_examples=int(__import__("os").environ.get("EMBER_RANDOM_GRAPHS", "6")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(STEP, min_size=1, max_size=6))
def test_random_graph_over_a_dynamic_size_matches_eager(program):
    fn = _random_program(program)
    compiled, graphs = _aot(fn)
    for n in (6, 5, 9, 13):
        x, y = ember.randn(n, n), ember.randn(n, n)
        for got, want in zip(compiled(x, y), fn(x, y), strict=True):
            assert_same(got, want, rtol=1e-4, atol=1e-5, check_strides=False)
    assert len(graphs) == 1


@pytest.mark.slow  # about 15 s of C++ compiles
def test_gpt_training_step_with_dynamic_batch_and_context(lowered):
    import copy

    import numpy as np
    from training_models import gpt, gpt_batch

    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    model = gpt(ember, layers=1, width=32, context=16)
    twin = copy.deepcopy(model)
    counter = CompileCounterWithBackend("inductor")
    compiled = ember.compile(twin, backend=counter, dynamic=True)
    # (2, 16): batch * context equals the width, and the context the position table's length, which the
    # first trace assumes; the next sizes break that (traced again), and then no size needs a new trace
    counts = []
    for batch, context in ((2, 16), (5, 9), (3, 13), (4, 11)):
        x, y = (ember.tensor(a) for a in gpt_batch(rng, batch=batch, context=context))
        model.zero_grad()
        twin.zero_grad()
        want, got = model(x, y), compiled(x, y)
        want.backward()
        got.backward()
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
        for p, q in zip(twin.parameters(), model.parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)
        counts.append(lowered["graphs"])
    assert counter.frame_count == 1
    assert counts[1] == counts[2] == counts[3]


def test_the_reduction_table_over_dynamic_sizes():
    from test_lowering_ops import reduction_graph

    compiled, graphs = _aot(lambda *a: tuple(reduction_graph(*a).values()))
    for n, a, b in ((4, 2, 3), (6, 5, 7), (9, 3, 2)):  # one trace: rows, and two dims of the 3-d input, vary
        x, z, i = ember.randn(n, 8), ember.randn(a, b, n), ember.randint(0, 6, (n, 8))
        want = reduction_graph(x, z, i)
        for key, got in zip(want, compiled(x, z, i), strict=True):
            assert_same(got, want[key], rtol=1e-4, atol=1e-5)
    assert len(graphs) == 1


def test_scans_and_random_ops_over_a_dynamic_dim_run_as_eager_calls():
    def fn(x):
        return ember.nn.functional.dropout(x, 0.5, training=True) * 2 + ember.rand_like(x), x.cumsum(0)

    compiled = ember.compile(fn, dynamic=True)
    for n in (3, 5, 17):
        x = ember.ones(n, 4)
        ember.manual_seed(7)
        first, scan = compiled(x)
        ember.manual_seed(7)
        again, _ = compiled(x)
        assert first.shape == (n, 4) and ember.equal(first, again)  # the same draws from the same seed
        # dropped: 0 + U[0, 1); kept: 2 * 2 + U[0, 1)
        assert bool(((first >= 0) & (first < 1) | (first >= 4) & (first < 5)).all())
        assert ember.equal(scan, x.cumsum(0))


def test_layer_norm_with_a_symbolic_normalized_shape_is_one_graph():
    def fn(x, w, b):
        return ember.nn.functional.layer_norm(x, (x.shape[-1],), w, b)

    compiled = ember.compile(fn, dynamic=True, fullgraph=True)
    for n in (8, 12):
        x, w, b = ember.randn(3, n), ember.randn(n), ember.randn(n)
        assert ember.allclose(compiled(x, w, b), fn(x, w, b), atol=1e-5)
