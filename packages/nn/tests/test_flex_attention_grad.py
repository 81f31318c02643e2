"""FlexAttention backward against float64 autograd of the explicit formula, and its memory bound.

The reference materializes the whole score matrix with ember's autograd ops: scores = Q Kᵀ · scale,
score_mod on full index tensors, masked to -inf, softmax, times V. Gradients of q, k, v and of the
tensors the score_mod captures must agree to float64 round-off.
"""

import tracemalloc

import numpy as np
import pytest
from _flex_variants import VARIANTS, H, make

import ember
from ember.nn.attention.flex_attention import AuxRequest, create_block_mask, flex_attention

B, D = 2, 8


def _index(n_b, n_h, q_len, kv_len):
    return (
        ember.arange(n_b).reshape(n_b, 1, 1, 1),
        ember.arange(n_h).reshape(1, n_h, 1, 1),
        ember.arange(q_len).reshape(1, 1, q_len, 1),
        ember.arange(kv_len).reshape(1, 1, 1, kv_len),
    )


def _reference(q, k, v, score_mod, mask_mod, groups):
    if groups > 1:
        k = (
            k.unsqueeze(2)
            .expand(k.shape[0], k.shape[1], groups, *k.shape[2:])
            .reshape(q.shape[0], q.shape[1], -1, k.shape[-1])
        )
        v = (
            v.unsqueeze(2)
            .expand(v.shape[0], v.shape[1], groups, *v.shape[2:])
            .reshape(q.shape[0], q.shape[1], -1, v.shape[-1])
        )
    scores = (q @ k.transpose(-2, -1)) * (1.0 / np.sqrt(q.shape[-1]))
    idx = _index(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    if score_mod is not None:
        scores = score_mod(scores, *idx)
    if mask_mod is not None:
        keep = mask_mod(*idx).expand(scores.shape)
        scores = ember.where(keep, scores, float("-inf"))
    lse = scores.logsumexp(-1)
    return scores.softmax(-1) @ v, lse


def _check(variant, q_len, kv_len, block, hkv=H, use_lse=False):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((B, h, n, D)) for h, n in ((H, q_len), (hkv, kv_len), (hkv, kv_len))]
    grad_out = ember.tensor(rng.standard_normal((B, H, q_len, D)))
    grad_lse = ember.tensor(rng.standard_normal((B, H, q_len)))
    results = []
    for flex in (True, False):
        score_mod, mask_mod, captured = make(variant, ember, q_len, kv_len, ember.float64, requires_grad=True)
        q, k, v = (ember.tensor(a, requires_grad=True) for a in arrays)
        if flex:
            bm = None if mask_mod is None else create_block_mask(mask_mod, None, None, q_len, kv_len, BLOCK_SIZE=block)
            out, aux = flex_attention(q, k, v, score_mod, bm, enable_gqa=hkv != H, return_aux=AuxRequest(lse=True))
            lse = aux.lse
        else:
            out, lse = _reference(q, k, v, score_mod, mask_mod, H // hkv)
        loss = (out * grad_out).sum() + ((lse * grad_lse).sum() if use_lse else 0.0)
        loss.backward()
        results.append([out, q.grad, k.grad, v.grad, *(c.grad for c in captured.values())])
    for got, want in zip(*results, strict=True):
        assert got is not None and want is not None
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("variant", VARIANTS)
def test_backward_matches_float64_formula(variant):
    _check(variant, 96, 96, 32)


@pytest.mark.parametrize("variant", ["causal", "alibi", "relative_bias"])
def test_backward_ragged_blocks_and_lse_gradient(variant):
    _check(variant, 70, 110, 32, use_lse=True)


@pytest.mark.parametrize("variant", ["causal", "softcap", "relative_bias"])
def test_backward_gqa(variant):
    _check(variant, 64, 64, 16, hkv=2)


def test_float32_backward_close_to_float64():
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((1, 2, 80, 8)) for _ in range(3)]
    grads = []
    for dtype in (ember.float32, ember.float64):
        q, k, v = (ember.tensor(a, dtype=dtype, requires_grad=True) for a in arrays)
        bm = create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, 80, 80, BLOCK_SIZE=16)
        flex_attention(q, k, v, block_mask=bm).sum().backward()
        assert q.grad.dtype is dtype
        grads.append([t.grad.numpy().astype(np.float64) for t in (q, k, v)])
    for g32, g64 in zip(*grads, strict=True):
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5)


def test_causal_16k_memory_stays_o_tile():
    n, dim = 16384, 16
    rng = np.random.default_rng(0)
    q, k, v = (ember.tensor(rng.standard_normal((1, 1, n, dim)), dtype=ember.float32) for _ in range(3))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        # Wide blocks keep the tile count (and the test's time) low; the bench measures 128 x 128.
        bm = create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, n, n, BLOCK_SIZE=512)
        out = flex_attention(q, k, v, block_mask=bm)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.shape == (1, 1, n, dim)
    # A single n x n float32 score matrix would take 1 GiB; the tiles take a few MB.
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_bfloat16_inputs_compute_in_float32():
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((1, 2, 40, 8)) for _ in range(3)]
    q, k, v = (ember.tensor(a, dtype=ember.bfloat16, requires_grad=True) for a in arrays)
    out = flex_attention(q, k, v, score_mod=lambda s, b, h, qi, kv: s * 0.5)
    assert out.dtype is ember.bfloat16
    out.float().sum().backward()
    assert q.grad.dtype is ember.bfloat16 and k.grad.shape == k.shape
    ref = flex_attention(*(t.detach().float() for t in (q, k, v)), score_mod=lambda s, b, h, qi, kv: s * 0.5)
    np.testing.assert_allclose(out.detach().float().numpy(), ref.numpy(), atol=2e-2)


def test_gradient_reaches_module_parameters_and_non_leaf_captures():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((1, H, 48, 8)) for _ in range(3)]

    class Bias(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = ember.nn.Parameter(ember.tensor(rng.standard_normal((H, 95))))

        def score_mod(self, score, b, h, q, kv):
            return score + self.table[h, q - kv + 47]

    module = Bias()
    base = ember.tensor(rng.standard_normal(H), requires_grad=True)

    def both(score, b, h, q, kv):
        return module.score_mod(score, b, h, q, kv) + slopes[h] * (kv - q)

    grads = []
    for flex in (True, False):
        module.table.grad = None
        base.grad = None
        slopes = base * 2.0  # not a leaf: the gradient must flow on to ``base``
        q, k, v = (ember.tensor(a) for a in arrays)
        out = flex_attention(q, k, v, score_mod=both) if flex else _reference(q, k, v, both, None, 1)[0]
        out.sum().backward()
        grads.append((module.table.grad.numpy().copy(), base.grad.numpy().copy()))
    for got, want in zip(*grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
