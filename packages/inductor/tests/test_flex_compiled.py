"""FlexAttention under ``ember.compile``: one generated C++ kernel, against eager flex_attention."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

import ember
import ember.inductor.compile_fx
from ember.inductor.flex_template import FlexKernel
from ember.inductor.flex_template_bwd import FlexBackwardKernel
from ember.nn.attention.flex_attention import AuxRequest, and_masks, create_block_mask, flex_attention

compile_fx_module = sys.modules["ember.inductor.compile_fx"]  # the module (the package's name is the function)

B, H, L, E = 2, 2, 64, 16
TOL = {ember.float32: 2e-5, ember.float64: 1e-12}


class Recorder:
    """Every graph ``compile_fx_inner`` compiles, in order (forward, then backward)."""

    def __init__(self, monkeypatch) -> None:
        self.graphs: list = []
        inner = compile_fx_module.compile_fx_inner

        def record(gm, example_inputs, **kwargs):
            compiled = inner(gm, example_inputs, **kwargs)
            self.graphs.append(compiled)
            return compiled

        monkeypatch.setattr(compile_fx_module, "compile_fx_inner", record)

    def flex_kernels(self, graph) -> list:
        return [s.op for s in graph.plan.steps if isinstance(getattr(s, "op", None), FlexKernel)]


@pytest.fixture
def rec(monkeypatch):
    ember.compiler.reset()
    return Recorder(monkeypatch)


def _qkv(dtype=ember.float32, hq=H, hkv=H, lq=L, lk=L, seed=0, requires_grad=False):
    ember.manual_seed(seed)
    q = ember.randn(B, hq, lq, E, dtype=dtype, requires_grad=requires_grad)
    k = ember.randn(B, hkv, lk, E, dtype=dtype, requires_grad=requires_grad)
    v = ember.randn(B, hkv, lk, E, dtype=dtype, requires_grad=requires_grad)
    return q, k, v


def _close(got, want, dtype):
    tol = TOL[dtype]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= 20


SLOPES = ember.tensor([0.5, 0.125])


def alibi(score, b, h, q_idx, kv_idx):
    return score + SLOPES[h] * (kv_idx - q_idx)


def _rel_bias(n):
    table = ember.linspace(-1.0, 1.0, 2 * n)

    def rel(score, b, h, q_idx, kv_idx):
        return score + table[q_idx - kv_idx + n]

    return rel


def _one_flex_kernel(rec):
    fw = rec.graphs[0]
    assert len(rec.flex_kernels(fw)) == 1
    assert fw.kernel_count == 0  # nothing else: the attention is the one kernel
    assert not [f for f in fw.fallbacks if "flex" in f[0]]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_no_mods_is_one_kernel(rec, dtype):
    q, k, v = _qkv(dtype)
    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v))
    _close(fn(q, k, v), flex_attention(q, k, v), dtype)
    _one_flex_kernel(rec)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_causal_block_mask(rec, dtype):
    q, k, v = _qkv(dtype)
    bm = create_block_mask(causal, B, H, L, L, BLOCK_SIZE=16)
    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, block_mask=bm))
    _close(fn(q, k, v), flex_attention(q, k, v, block_mask=bm), dtype)
    _one_flex_kernel(rec)


def test_sliding_window_with_ragged_lengths_and_lse(rec):
    lq, lk = 50, 70
    q, k, v = _qkv(lq=lq, lk=lk)
    bm = create_block_mask(and_masks(causal, window), None, None, lq, lk, BLOCK_SIZE=16)

    def f(q, k, v):
        return flex_attention(q, k, v, block_mask=bm, return_aux=AuxRequest(lse=True, max_scores=True))

    out, aux = ember.compile(f)(q, k, v)
    want, want_aux = f(q, k, v)
    _close(out, want, ember.float32)
    _close(aux.lse, want_aux.lse, ember.float32)
    _close(aux.max_scores, want_aux.max_scores, ember.float32)
    _one_flex_kernel(rec)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_alibi_score_mod_reads_a_captured_slope_tensor(rec, dtype):
    q, k, v = _qkv(dtype)
    bm = create_block_mask(causal, 1, 1, L, L, BLOCK_SIZE=16)
    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, score_mod=alibi, block_mask=bm))
    _close(fn(q, k, v), flex_attention(q, k, v, score_mod=alibi, block_mask=bm), dtype)
    _one_flex_kernel(rec)
    kernel = rec.flex_kernels(rec.graphs[0])[0]
    assert len(kernel.captured) == 1 and "sm_cap0[" in kernel.source


def test_relative_position_bias_table_and_scale(rec):
    q, k, v = _qkv()
    rel = _rel_bias(L)
    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, score_mod=rel, scale=0.3))
    _close(fn(q, k, v), flex_attention(q, k, v, score_mod=rel, scale=0.3), ember.float32)
    _one_flex_kernel(rec)


def test_grouped_query_heads(rec):
    q, k, v = _qkv(hq=4, hkv=2)
    bm = create_block_mask(causal, None, None, L, L, BLOCK_SIZE=16)
    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, block_mask=bm, enable_gqa=True))
    _close(fn(q, k, v), flex_attention(q, k, v, block_mask=bm, enable_gqa=True), ember.float32)
    _one_flex_kernel(rec)


def test_fused_with_the_code_around_it(rec):
    q, k, v = _qkv()

    def f(q, k, v):
        return (flex_attention(q * 2, k, v, score_mod=alibi) + 1).sum(-1)

    _close(ember.compile(f)(q, k, v), f(q, k, v), ember.float32)
    assert len(rec.flex_kernels(rec.graphs[0])) == 1


def test_a_score_mod_the_tracer_cannot_follow_runs_the_eager_kernel(rec, caplog):
    q, k, v = _qkv()

    def data_dependent(score, b, h, q_idx, kv_idx):
        return score * 2 if bool((score > 100).any()) else score

    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, score_mod=data_dependent))
    ember.logs.set_logs(perf_hints=True)
    try:
        with caplog.at_level(logging.INFO):
            out = fn(q, k, v)
    finally:
        ember.logs.set_logs()
    _close(out, flex_attention(q, k, v, score_mod=data_dependent), ember.float32)
    assert not rec.flex_kernels(rec.graphs[0])
    assert any("score_mod could not be traced" in r.getMessage() for r in caplog.records)


def test_an_index_out_of_range_raises_index_error(rec):
    q, k, v = _qkv()
    table = ember.zeros(L)

    def bad(score, b, h, q_idx, kv_idx):
        return score + table[q_idx + kv_idx]

    with pytest.raises(IndexError):
        flex_attention(q, k, v, score_mod=bad)
    with pytest.raises(IndexError):
        ember.compile(lambda q, k, v: flex_attention(q, k, v, score_mod=bad))(q, k, v)


def test_another_score_mod_compiles_again(rec):
    q, k, v = _qkv()

    def f(q, k, v, mod):
        return flex_attention(q, k, v, score_mod=mod)

    fn = ember.compile(f)
    rel = _rel_bias(L)
    _close(fn(q, k, v, alibi), f(q, k, v, alibi), ember.float32)
    _close(fn(q, k, v, rel), f(q, k, v, rel), ember.float32)


def test_backward_matches_eager(rec):
    q, k, v = _qkv(dtype=ember.float64, requires_grad=True)
    bm = create_block_mask(causal, B, H, L, L, BLOCK_SIZE=16)

    def f(q, k, v):
        return flex_attention(q, k, v, score_mod=alibi, block_mask=bm)

    ember.compile(f)(q, k, v).pow(2).sum().backward()
    got = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    f(q, k, v).pow(2).sum().backward()
    for g, t in zip(got, (q, k, v), strict=True):
        _close(g, t.grad, ember.float64)
    assert len(rec.flex_kernels(rec.graphs[0])) == 1
    assert len(rec.graphs) == 2
    backward = [s.op for s in rec.graphs[1].plan.steps if isinstance(getattr(s, "op", None), FlexBackwardKernel)]
    assert len(backward) == 1 and rec.graphs[1].kernel_count <= 1  # the kernel, and at most the loss's gradient


def _grads(fn, q, k, v):
    for t in (q, k, v):
        t.grad = None
    out, lse = fn(q, k, v)
    (out.sin().sum() + (lse * lse).sum()).backward()
    return [t.grad.clone() for t in (q, k, v)]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_backward_kernel_with_grouped_heads_nonlinear_score_mod_and_lse_gradient(rec, dtype):
    q, k, v = _qkv(dtype, hq=4, hkv=2, lk=72, requires_grad=True)
    bm = create_block_mask(and_masks(causal, window), None, None, L, 72, BLOCK_SIZE=16)

    def softcap(score, b, h, q_idx, kv_idx):
        return 2.0 * (score / 2.0).tanh()

    def f(q, k, v):
        return flex_attention(q, k, v, score_mod=softcap, block_mask=bm, enable_gqa=True, return_lse=True)

    with pytest.warns(FutureWarning):
        got = _grads(ember.compile(f), q, k, v)
    with pytest.warns(FutureWarning):
        want = _grads(f, q, k, v)
    tol = 5e-5 if dtype is ember.float32 else 1e-11
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)
    backward = [s.op for s in rec.graphs[1].plan.steps if isinstance(getattr(s, "op", None), FlexBackwardKernel)]
    assert len(backward) == 1 and backward[0].has_grad_lse


def test_backward_of_a_captured_bias_table(rec):
    q, k, v = _qkv(requires_grad=True)
    rel = _rel_bias(L)

    def f(q, k, v):
        return flex_attention(q, k, v, score_mod=rel, return_aux=AuxRequest(lse=True))

    def g(q, k, v):
        out, aux = f(q, k, v)
        return out, aux.lse

    got = _grads(ember.compile(g), q, k, v)
    want = _grads(g, q, k, v)
    for a, w in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=5e-5, atol=5e-5)


def test_graphs_holding_flex_attention_are_not_put_in_the_graph_cache(rec):
    from ember.inductor import fx_graph_cache

    q, k, v = _qkv()
    before = fx_graph_cache.stats["stores"]

    def data_dependent(score, b, h, q_idx, kv_idx):  # the eager op in the graph, named by its spec
        return score * 2 if bool((score > 100).any()) else score

    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, score_mod=data_dependent))
    _close(fn(q, k, v), flex_attention(q, k, v, score_mod=data_dependent), ember.float32)
    assert fx_graph_cache.stats["stores"] == before


def test_compiling_flex_attention_itself(rec):
    q, k, v = _qkv()
    bm = create_block_mask(causal, None, None, L, L, BLOCK_SIZE=16)
    compiled = ember.compile(flex_attention)
    _close(compiled(q, k, v, score_mod=alibi, block_mask=bm), flex_attention(q, k, v, alibi, bm), ember.float32)
    _one_flex_kernel(rec)


def test_a_partial_score_mod_runs_eagerly_and_is_not_dropped(rec):
    import functools

    q, k, v = _qkv()

    def shifted(score, b, h, q_idx, kv_idx, by):
        return score + by * q_idx

    mod = functools.partial(shifted, by=0.01)
    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, score_mod=mod))
    _close(fn(q, k, v), flex_attention(q, k, v, score_mod=mod), ember.float32)


def test_kernel_options_are_accepted_and_ignored_as_eager_does(rec):
    q, k, v = _qkv()
    options = {"BLOCK_M": 32, "BLOCK_N": 32}
    fn = ember.compile(lambda q, k, v: flex_attention(q, k, v, score_mod=alibi, kernel_options=options))
    _close(fn(q, k, v), flex_attention(q, k, v, score_mod=alibi), ember.float32)
    _one_flex_kernel(rec)


def test_the_fused_and_two_pass_backward_kernels_agree(rec, monkeypatch):
    from ember.inductor import lowering_flex

    q, k, v = _qkv(hq=4, hkv=2, requires_grad=True)
    bm = create_block_mask(causal, None, None, L, L, BLOCK_SIZE=16)
    slopes = ember.tensor([0.5, 0.25, 0.125, 0.0625])

    def alibi4(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    def f(q, k, v):
        return flex_attention(q, k, v, score_mod=alibi4, block_mask=bm, enable_gqa=True, return_lse=True)

    results = []
    for fused in (True, False):
        ember.compiler.reset()
        monkeypatch.setattr(lowering_flex, "fused_backward", lambda problem, fused=fused: fused)
        with pytest.warns(FutureWarning):
            results.append(_grads(ember.compile(f), q, k, v))
    kernels = [s.op for g in rec.graphs for s in g.plan.steps if isinstance(getattr(s, "op", None), FlexBackwardKernel)]
    assert [kernel.fused for kernel in kernels] == [True, False]
    for a, b in zip(*results, strict=True):  # the same sums, in the same order; the compiler's rounding aside
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_value_dim_other_than_the_head_dim_and_a_mask_per_batch_and_head(rec):
    ember.manual_seed(1)
    q, k = ember.randn(B, H, L, E, requires_grad=True), ember.randn(B, H, L, E, requires_grad=True)
    v = ember.randn(B, H, L, 24, requires_grad=True)

    def per_head(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) | ((h == 1) & (b == 0))

    bm = create_block_mask(per_head, B, H, L, L, BLOCK_SIZE=16)

    def f(q, k, v):
        return flex_attention(q, k, v, score_mod=alibi, block_mask=bm)

    out = ember.compile(f)(q, k, v)
    assert tuple(out.shape) == (B, H, L, 24)
    _close(out, f(q, k, v), ember.float32)
    got = _grads(ember.compile(lambda q, k, v: (f(q, k, v), q.sum(-1))), q, k, v)
    want = _grads(lambda q, k, v: (f(q, k, v), q.sum(-1)), q, k, v)
    for a, w in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=5e-5, atol=5e-5)
