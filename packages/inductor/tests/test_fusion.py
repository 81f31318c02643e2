"""Fused graphs: softmax and layer norm as one kernel, a GELU MLP forward and backward through AOT."""

from __future__ import annotations

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.aot.aot_autograd import aot_function
from ember.inductor.compile_fx import compile_fx_inner
from ember.inductor.wrapper import ExternStep


@pytest.fixture(scope="module")
def norm_graphs():
    """Softmax and layer norm, each compiled alone (their kernels are shared by the tests below)."""
    ember.manual_seed(1)
    x = ember.randn(64, 48)
    w, b = ember.randn(48), ember.randn(48)
    soft, rec_s = compile_with_inductor(lambda t: ember.softmax(t, -1))
    norm, rec_n = compile_with_inductor(lambda t, w, b: F.layer_norm(t, (48,), w, b))
    return x, w, b, soft(x), norm(x, w, b), rec_s.graphs[0], rec_n.graphs[0]


def test_softmax_is_one_kernel(norm_graphs):
    x, _, _, got, _, graph, _ = norm_graphs
    assert_same(got, ember.softmax(x, -1))
    assert graph.kernel_count == 1
    assert graph.source.count("#pragma omp simd") >= 1


def test_layer_norm_is_one_kernel(norm_graphs):
    x, w, b, _, got, _, graph = norm_graphs
    assert_same(got, F.layer_norm(x, (48,), w, b), atol=2e-5)
    assert graph.kernel_count == 1
    kernels = graph.source.split('extern "C"', 1)[1]
    assert kernels.count("#pragma omp simd reduction(+:") == 2  # two vectorized passes: sum, squared deviations


def test_pointwise_chain_is_one_kernel_and_intermediates_are_not_stored():
    x = ember.randn(1000)
    fn, rec = compile_with_inductor(lambda t: ((t * 2).sin() + 1).exp().relu() / 3)
    assert_same(fn(x), ((x * 2).sin() + 1).exp().relu() / 3)
    (graph,) = rec.graphs
    assert graph.kernel_count == 1
    assert graph.source.count("] = static_cast") == 1  # one store: the output


def test_dead_buffers_are_removed():
    x = ember.randn(8, 8)

    def fn(t):
        unused = t.sum(0)  # noqa: F841  (computed, never returned)
        return t + 1

    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(x), x + 1)
    assert rec.graphs[0].kernel_count == 1
    kernels = rec.graphs[0].source.split('extern "C"', 1)[1]
    assert "acc" not in kernels  # the unused sum has no loop


def test_gelu_mlp_forward_and_backward_through_aot():
    ember.manual_seed(2)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16), nn.LayerNorm(16))
    x = ember.randn(8, 16)
    params = dict(mlp.named_parameters())

    def fn(x, *ps):
        return ember.func.functional_call(mlp, dict(zip(params, ps, strict=True)), (x,))

    compiled = aot_function(fn, fw_compiler=compile_fx_inner, bw_compiler=compile_fx_inner)
    ps = [p.detach().clone().requires_grad_() for p in params.values()]
    ps_ref = [p.detach().clone().requires_grad_() for p in params.values()]
    out = compiled(x, *ps)
    ref = fn(x, *ps_ref)
    assert_same(out, ref, atol=1e-5)
    (out * ref.detach()).sum().backward()
    (ref * ref.detach()).sum().backward()
    for a, b in zip(ps, ps_ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_gemms_run_as_extern_calls_with_a_perf_hint(capfd):
    ember.logs.set_logs(perf_hints=True)
    try:
        a, b = ember.randn(4, 5), ember.randn(5, 3)
        compiled, rec = compile_with_inductor(lambda a, b: (a @ b).relu())
        assert_same(compiled(a, b), (a @ b).relu())
    finally:
        ember.logs.set_logs()
    assert "aten.mm.default) runs as an extern call of its eager kernel: a GEMM" in capfd.readouterr().err
    graph = rec.graphs[0]
    assert any(isinstance(s, ExternStep) for s in graph.steps)
    assert graph.fallbacks and "GEMM" in graph.fallbacks[0][1]


def test_an_op_without_lowering_falls_back_with_its_reason():
    x = ember.randn(6, 5)
    compiled, rec = compile_with_inductor(lambda t: (t * 2).sort(1).values + 1)
    assert_same(compiled(x), (x * 2).sort(1).values + 1)
    reasons = dict(rec.graphs[0].fallbacks)
    assert reasons == {"aten.sort.stable": "no lowering for aten.sort.stable"}


def test_a_returned_value_is_read_back_by_its_other_readers():
    """A value the graph returns is written anyway: a reduction that also reads it loads it rather than
    computing it again from the input (one ``sin`` in the source, not two)."""
    x = ember.randn(64, 32)

    def fn(t):
        y = t.sin() * 2
        return y, y.exp().sum(0)

    compiled, rec = compile_with_inductor(fn)
    got, want = compiled(x), fn(x)
    assert_same(got[0], want[0])
    assert_same(got[1], want[1], rtol=1e-5)
    (graph,) = rec.graphs
    kernels = graph.source.split('extern "C"', 1)[1]
    assert kernels.count("sin(") == 1, kernels
