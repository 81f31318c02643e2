"""The Triton code generator, run on the CPU through Triton's interpreter, against eager.

Runs under ``TRITON_INTERPRET=1`` with Triton installed (``nox -s triton_interpret``); skipped
elsewhere. The graphs are those of ``test_lowering_ops`` (every lowered op) plus what is particular to
Triton's kernels: fused reductions, block edges, half types, indirect loads and their errors, random
numbers bit for bit with the C++ kernels', symbolic sizes, and a training step.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import os

import numpy as np
import pytest
import test_random_graphs as random_graphs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inductor_testing import assert_same, compile_with_inductor
from test_lowering_ops import pointwise_graph, reduction_graph, view_graph

import ember
import ember.nn.functional as F
from ember.inductor import config
from ember.inductor.runtime import triton_launch
from ember.inductor.runtime.triton_launch import TritonKernelStep

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs Triton and TRITON_INTERPRET=1 (nox -s triton_interpret)",
)


@pytest.fixture(autouse=True, scope="module")
def triton_backend():
    saved = config.cpu_backend
    config.cpu_backend = "triton"
    yield
    config.cpu_backend = saved
    ember.compiler.reset()


def _compiled(fn, *args):
    compiled, rec = compile_with_inductor(fn)
    return compiled(*args), fn(*args), rec


def _triton_steps(graph) -> list:
    return [s for s in graph.steps if isinstance(s, TritonKernelStep)]


def _all_triton(graph) -> bool:
    return all(isinstance(s, TritonKernelStep) for s in graph.steps if getattr(s, "kernel", False))


@pytest.fixture(scope="module")
def inputs():
    ember.manual_seed(0)
    x, y = ember.randn(4, 8), ember.randn(4, 8) + 3
    i = ember.randint(0, 6, (4, 8))
    m = ember.randn(4, 8) > 0
    z = ember.randn(2, 3, 4)
    return x, y, i, m, z


def _dict_graph(fn, skip=()):
    def graph(*args):
        return tuple(v for k, v in fn(*args).items() if k not in skip)

    return graph


# atan has no Triton form (its group stays C++: test_refused_ops_stay_cpp)
POINTWISE_SKIP = ("atan",)


@pytest.fixture(scope="module")
def lowered(inputs):
    x, y, i, m, z = inputs
    out = {}
    for fn, args, skip in (
        (pointwise_graph, (x, y, i, m), POINTWISE_SKIP),
        (view_graph, (x, z), ()),
        (reduction_graph, (x, z, i), ()),
    ):
        keys = [k for k in fn(*args) if k not in skip]
        got, want, rec = _compiled(_dict_graph(fn, skip), *args)
        assert _all_triton(rec.graphs[0]) and _triton_steps(rec.graphs[0])
        out |= {k: (g, w) for k, g, w in zip(keys, got, want, strict=True)}
    return out


def test_every_lowered_op_matches_eager(lowered):
    failures = []
    for name, (got, want) in lowered.items():
        try:
            assert_same(got, want, rtol=3e-5, atol=3e-6)
        except AssertionError as error:
            failures.append(f"{name}: {error}")
    assert not failures, "\n".join(failures)


def test_fused_normalizations_are_one_kernel_each():
    x = ember.randn(6, 300)
    w, b = ember.randn(300), ember.randn(300)
    for fn in (
        lambda x, w, b: ember.softmax(x, -1),
        lambda x, w, b: ember.log_softmax(x, -1),
        lambda x, w, b: F.layer_norm(x, (300,), w, b),
        lambda x, w, b: x * ember.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
    ):
        got, want, rec = _compiled(fn, x, w, b)
        assert_same(got, want, rtol=2e-5, atol=2e-6)
        (graph,) = rec.graphs
        assert len(_triton_steps(graph)) == 1 and graph.kernel_count == 1


@pytest.mark.parametrize("shape", [(1, 1), (3, 100), (130, 7), (2, 3, 5, 7)])
def test_block_edges(shape, monkeypatch):
    """Rows and inner loops that do not fill a block, or exceed one (small blocks: many programs, many
    steps of each inner loop)."""
    monkeypatch.setattr(triton_launch, "candidates", lambda rows, inner: [(4, 16, 4)])
    x = ember.randn(*shape)
    got, want, _ = _compiled(lambda x: (x.sum(-1), x.amax(0), x.argmin(-1), (x * 2).exp(), x.var(-1)), x)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, rtol=2e-5, atol=2e-5)


def test_block_sizes_are_chosen_by_timing_once_per_size(caplog, monkeypatch):
    """A GPU's candidates, timed here under the interpreter (which takes one large block by itself)."""
    gpu = triton_launch.candidates
    monkeypatch.setattr(triton_launch, "candidates", lambda rows, inner: gpu(rows, inner, interpreter=False))
    ember.logs.set_logs(kernel_choice=True)
    try:
        with caplog.at_level(logging.INFO):
            compiled, rec = compile_with_inductor(lambda x: ember.softmax(x, -1))
            x = ember.randn(20, 40)
            compiled(x)
            compiled(x)
    finally:
        ember.logs.set_logs()
    (step,) = _triton_steps(rec.graphs[0])
    assert list(step.chosen) == [(20, 40)] and step.chosen[(20, 40)] in gpu(20, 40, interpreter=False)
    choices = [r.getMessage() for r in caplog.records if "chose" in r.getMessage()]
    assert len(choices) == 1 and "XBLOCK=1 RBLOCK=64" in choices[0] and "XBLOCK=8 RBLOCK=64" in choices[0]


def test_strided_and_transposed_inputs():
    base = ember.randn(12, 20)
    x = base.t()[::2]  # (10, 12), strides (2, 20)
    got, want, _ = _compiled(lambda x: (x + 1, x.sum(0), x.sum(1), ember.softmax(x, 0)), x)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float64])
def test_float_types(dtype):
    x = ember.randn(5, 33).to(dtype)
    got, want, _ = _compiled(lambda x: (x * 1.5 + 1, x.sum(-1), ember.softmax(x.float(), -1).to(dtype)), x)
    tol = {ember.float16: 2e-3, ember.bfloat16: 2e-2, ember.float64: 1e-12}[dtype]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        # the softmax is computed in float32 whatever the input
        assert_same(g, w, rtol=max(tol, 1e-6) if k == 2 else tol, atol=max(tol, 1e-7) if k == 2 else tol)


def test_integer_and_bool_math():
    a = ember.randint(-20, 20, (6, 9))
    b = ember.randint(1, 7, (6, 9)) * (ember.randint(0, 2, (6, 9)) * 2 - 1)
    fn = lambda a, b: (  # noqa: E731
        a // b, ember.remainder(a, b), a * b - 3, (a > b) & (a != 0), ~(a > 0), a & b, a | b, a ^ b,
        a.sum(0), a.amax(1), a.amin(0), (a > 0).any(1), a.prod(1), a.abs(), a.float() / b,
    )  # fmt: skip
    got, want, _ = _compiled(fn, a, b)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)


def test_special_values():
    x = ember.tensor([[0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30, -1e-30, 88.0, -100.0, 2.5]])
    fn = lambda x: (  # noqa: E731
        x.exp(), x.expm1(), ember.log1p(x.abs()), x.tanh(), x.sigmoid(), x.sign(), x.relu(), ember.isinf(x),
        ember.isnan(x), x.round(), x.trunc(), ember.maximum(x, x.flip(-1)), x.amax(-1), x.amin(-1),
        x.argmax(-1), x.abs().sqrt(), x.sinh(), x.cosh(), x.abs() ** 0.5, x**2,
    )  # fmt: skip
    got, want, _ = _compiled(fn, x)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        try:
            assert_same(g, w, rtol=1e-6, atol=1e-30)
        except AssertionError as error:
            raise AssertionError(f"output {k}") from error


def test_round_half_to_even():
    x = ember.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -3.2, 7.7])
    got, want, _ = _compiled(lambda x: x.round(), x)
    assert_same(got, want)


def test_indirect_loads():
    weight = ember.randn(11, 16)
    idx = ember.tensor([[0, 3, 10], [5, 5, 1]])
    src = ember.randn(4, 11)
    gidx = ember.randint(0, 11, (4, 6))
    fn = lambda w, i, s, g: (F.embedding(i, w), w.index_select(0, i.reshape(-1)), s.gather(1, g), w[i[0]])  # noqa: E731
    got, want, _ = _compiled(fn, weight, idx, src, gidx)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)


def test_out_of_range_indexes_raise_eagers_errors():
    weight = ember.randn(11, 16)
    compiled, _ = compile_with_inductor(lambda w, i: F.embedding(i, w) * 2)
    compiled(weight, ember.tensor([1, 2]))
    with pytest.raises(IndexError, match="index out of range in self"):
        compiled(weight, ember.tensor([1, 11]))
    compiled, _ = compile_with_inductor(lambda s, g: s.gather(1, g) + 1)
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 5"):
        compiled(ember.randn(2, 5), ember.tensor([[0, 7], [1, 2]]))


def test_random_numbers_are_the_cpp_kernels_bits():
    """Philox in Triton gives the C++ kernels' numbers (eager's stream) for rand, and randn to float32
    rounding of the same transform."""

    def fn(x):
        return ember.rand_like(x), ember.randn_like(x), F.dropout(x, 0.3, training=True)

    x = ember.randn(7, 50)
    outs = {}
    for backend in ("triton", "cpp"):
        config.cpu_backend = backend
        try:
            ember.manual_seed(1234)
            compiled, _ = compile_with_inductor(fn)
            outs[backend] = [t.numpy() for t in compiled(x)]
        finally:
            config.cpu_backend = "triton"
    (a_rand, a_randn, a_drop), (b_rand, b_randn, b_drop) = outs["triton"], outs["cpp"]
    np.testing.assert_array_equal(a_rand, b_rand)
    np.testing.assert_allclose(a_randn, b_randn, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(a_drop, b_drop)


def test_symbolic_sizes_one_kernel_for_every_size():
    fn = ember.compile(lambda x: ember.softmax(x * 2, -1).sum(0), dynamic=True)
    for shape in ((3, 17), (5, 40), (9, 3)):
        x = ember.randn(*shape)
        assert_same(fn(x), ember.softmax(x * 2, -1).sum(0), rtol=2e-5, atol=2e-6)


def test_refused_ops_stay_cpp(caplog):
    x = ember.randn(4, 8)
    ember.logs.set_logs(perf_hints=True)
    try:
        with caplog.at_level(logging.INFO):
            got, want, _ = _compiled(lambda x: (x.atan() + 1, x.exp().sum(-1)), x)
    finally:
        ember.logs.set_logs()
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    assert any("stays a C++ kernel: atan has no Triton form" in r.getMessage() for r in caplog.records)


def test_training_matches_eager():
    ember.manual_seed(0)
    model = ember.nn.Sequential(
        ember.nn.Linear(12, 32), ember.nn.GELU(), ember.nn.LayerNorm(32), ember.nn.Linear(32, 5)
    )
    ref = copy.deepcopy(model)
    x, target = ember.randn(16, 12), ember.randint(0, 5, (16,))
    opt, ref_opt = ember.optim.SGD(model.parameters(), lr=0.1), ember.optim.SGD(ref.parameters(), lr=0.1)
    step = ember.compile(lambda x, t: F.cross_entropy(model(x), t))
    for _ in range(3):
        loss = step(x, target)
        loss.backward()
        opt.step()
        opt.zero_grad()
        ref_loss = F.cross_entropy(ref(x), target)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)


@settings(max_examples=int(os.environ.get("EMBER_RANDOM_GRAPHS", "6")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.lists(random_graphs.step, min_size=1, max_size=6))
def test_random_graphs_match_eager(program):
    """The random graphs of ``test_random_graphs`` (pointwise ops, views, reductions), as Triton kernels."""
    ember.manual_seed(0)
    x, y = ember.randn(6, 6), ember.randn(6, 6)
    fn = random_graphs._build(program)
    compiled, rec = compile_with_inductor(fn)
    for got, want in zip(compiled(x, y), fn(x, y), strict=True):
        assert_same(got, want, rtol=1e-4, atol=1e-5, check_strides=False)
    assert all(_all_triton(graph) for graph in rec.graphs)


def test_a_small_cnn_step_matches_eager():
    """Batch norm's statistics and update, ReLU, max pooling and its backward, cross-entropy: the
    kernels around the convolutions (which run as extern calls)."""
    nn = ember.nn
    ember.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 8 * 8, 10)
    )  # fmt: skip
    twin = copy.deepcopy(model)
    x, y = ember.randn(4, 3, 16, 16), ember.randint(0, 10, (4,))
    loss = ember.compile(lambda x, y: F.cross_entropy(model(x), y))(x, y)
    loss.backward()
    want = F.cross_entropy(twin(x), y)
    want.backward()
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-5)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)
    for a, b in zip(model.buffers(), twin.buffers(), strict=True):  # the running statistics
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
