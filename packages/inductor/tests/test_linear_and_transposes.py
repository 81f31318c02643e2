"""Two schedules of a Linear's training step: the bias of ``addmm`` added in the kernels that read the
product, and transposing copies kept out of other loops so that they and column sums walk memory in
order."""

from __future__ import annotations

import numpy as np
from inductor_testing import assert_same, compile_with_inductor

import ember
import ember.nn.functional as F
from ember.inductor.compile_fx import compile_fx_inner
from ember.inductor.scheduler import FusedGroup, remove_dead, schedule


def test_a_linear_is_mm_and_its_bias_joins_the_next_kernel():
    x, w, b = ember.randn(16, 24), ember.randn(40, 24), ember.randn(40)
    fn, rec = compile_with_inductor(lambda x, w, b: F.linear(x, w, b).relu() * 2)
    got = fn(x, w, b)
    # eager rounds the product and then adds the bias, as the kernel does: the same bits
    np.testing.assert_array_equal(got.numpy(), (F.linear(x, w, b).relu() * 2).numpy())
    (graph,) = rec.graphs
    assert graph.kernel_count == 1 and "aten.addmm.default" in {str(op) for op in graph.lowered}
    assert [f for f, _ in graph.fallbacks] == ["aten.mm.default"]


def test_addmm_with_scaling_stays_eagers_addmm():
    a, m1, m2 = ember.randn(5, 7), ember.randn(5, 3), ember.randn(3, 7)
    fn, rec = compile_with_inductor(lambda a, m1, m2: ember.addmm(a, m1, m2, beta=0.5, alpha=2.0) + 1)
    assert_same(fn(a, m1, m2), ember.addmm(a, m1, m2, beta=0.5, alpha=2.0) + 1)
    assert [f for f, _ in rec.graphs[0].fallbacks] == ["aten.addmm.default"]


def test_a_viewed_projection_stays_one_buffer_of_views():
    """Attention's heads are views of the projection's output, as in eager (saved for the backward
    with the strides the graph traced)."""
    x, w, b = ember.randn(2, 6, 8), ember.randn(24, 8), ember.randn(24)

    def heads(x, w, b):
        qkv = F.linear(x, w, b).view(2, 6, 3, 2, 4)
        return qkv[:, :, 0].transpose(1, 2), qkv[:, :, 1].transpose(1, 2)

    fn, _ = compile_with_inductor(heads)
    for g, want in zip(fn(x, w, b), heads(x, w, b), strict=True):
        assert_same(g, want)
        assert g.stride() == want.stride()


def test_an_output_reshaped_from_another_is_its_view():
    """A layer norm's output and its rows for a GEMM, both saved for the backward: the second is a
    view of the first, as in eager, not a copy."""
    x = ember.randn(2, 6, 8)

    def fn(x):
        y = F.layer_norm(x, (8,)) * 2
        return y, y.view(12, 8), y.transpose(1, 2)

    compiled, _ = compile_with_inductor(fn)
    got, want = compiled(x), fn(x)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    assert got[1].data_ptr() == got[0].data_ptr() == got[2].data_ptr()


def _groups(fn, *args):
    captured = []

    def compiler(gm, inputs):
        captured.append((gm, inputs))
        return compile_fx_inner(gm, inputs)

    from ember.aot.aot_autograd import aot_function
    from ember.aot.backends import core_decompositions

    out = aot_function(fn, fw_compiler=compiler, decompositions=core_decompositions())(*args)
    from ember.inductor.graph import GraphLowering

    gm, inputs = captured[0]
    graph = GraphLowering(gm, inputs)
    graph.run()
    outs = {o.name for o in graph.outputs if hasattr(o, "name")}
    live = remove_dead([b for b in graph.buffers if b not in graph.inputs], outs)
    return out, [s for s in schedule(live) if isinstance(s, FusedGroup)]


def test_a_transposing_copy_keeps_a_group_of_its_own():
    """A column sum (a bias's gradient) and a transposed copy of another matrix have the same rows;
    fused, both walked memory a row length apart per step. Apart, each walks it in order."""
    g, h = ember.randn(64, 48), ember.randn(64, 48)
    out, groups = _groups(lambda g, h: (g.sum(0), h.t().contiguous() * 1), g, h)
    assert_same(out[0], g.sum(0))
    assert_same(out[1], h.t().contiguous())
    assert sorted(len(group.nodes) for group in groups) == [1, 1]
    assert any(group.alone for group in groups)


def test_pointwise_nodes_of_the_same_rows_still_fuse():
    g, h = ember.randn(64, 48), ember.randn(64, 48)
    _, groups = _groups(lambda g, h: (g.sum(1), (g * h).sum(1)), g, h)
    assert len(groups) == 1 and len(groups[0].nodes) == 2 and not groups[0].alone


def test_a_value_an_extern_call_reads_is_computed_once():
    """A GELU that feeds a GEMM and is also returned (saved for a backward) is computed once: realized
    for the GEMM, the box reads the buffer from then on."""
    x, w = ember.randn(16, 24), ember.randn(24, 8)
    fn, rec = compile_with_inductor(lambda x, w: (F.gelu(x) @ w, F.gelu(x)))
    got = fn(x, w)
    assert_same(got[0], F.gelu(x) @ w, rtol=1e-5, atol=1e-5)
    assert_same(got[1], F.gelu(x))
    kernels = rec.graphs[0].source.split('extern "C"', 1)[1]
    assert kernels.count("std::erf(") == 1


def test_a_node_after_a_gemm_it_does_not_read_joins_the_kernel_before_it():
    """MLP: the pre-activation h = x @ w1 + b (returned) and GELU(h) (the second GEMM's input) are one
    kernel before the second GEMM, reading the product once."""
    x, w1, b, w2 = ember.randn(32, 16), ember.randn(24, 16), ember.randn(24), ember.randn(8, 24)

    def mlp(x, w1, b, w2):
        h = F.linear(x, w1, b)
        return F.linear(F.gelu(h), w2), h

    fn, rec = compile_with_inductor(mlp)
    for g, want in zip(fn(x, w1, b, w2), mlp(x, w1, b, w2), strict=True):
        assert_same(g, want, rtol=1e-5, atol=1e-5)
    (graph,) = rec.graphs
    assert graph.kernel_count == 1


def test_a_3d_linear_keeps_its_bias_in_the_next_kernel():
    """A Linear on (B, T, C) is addmm on (B*T, C) viewed back: a reshape, which does not need the
    product with its bias in memory: GELU's kernel adds it."""
    x, w, b = ember.randn(2, 6, 8), ember.randn(12, 8), ember.randn(12)
    fn, rec = compile_with_inductor(lambda x, w, b: F.gelu(F.linear(x, w, b)))
    assert_same(fn(x, w, b), F.gelu(F.linear(x, w, b)), rtol=1e-5, atol=1e-6)
    assert rec.graphs[0].kernel_count == 1
