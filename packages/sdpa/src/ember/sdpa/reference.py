"""Attention in float64 NumPy: the math every attention kernel is tested against.

    S = Q Kᵀ · scale + mask,  P = softmax(S) (row-wise),  O = dropout(P) V

written plainly with S x S matrices, so it is the specification rather than an algorithm. The
conventions that the kernels share:

- Shapes: q (B, Hq, Sq, D); k, v (B, Hkv, Skv, D), with query head h reading key/value head
  ``h // (Hq // Hkv)`` (grouped-query attention).
- ``mask`` broadcasts to (B, Hq, Sq, Skv): a boolean mask keeps the positions that are True; a
  floating mask is added to the scores. ``is_causal`` keeps key j for query i when j <= i (the
  top-left alignment of PyTorch's ``is_causal``).
- ``scale`` defaults to 1/sqrt(D).
- A row whose keys are all masked out gives zeros in ``out`` and zero gradients, with
  ``lse = +inf`` (so ``exp(s - lse)`` is 0 wherever a kernel recomputes it).
- ``lse`` is the natural log-sum-exp of the scaled, masked scores of each row, before dropout.
- Dropout keeps element (b, h, i, j) when ``philox.rand(seed, offset + ((b·Hq + h)·Sq + i)·Skv + j)
  >= dropout_p`` and scales kept elements by 1/(1 - dropout_p); ``rand`` is the stream of
  ``ember.core.philox``, which equals Triton's ``tl.rand``, so every kernel can draw the same mask.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import philox


def _scores(q, k, mask, is_causal, scale):
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k.astype(np.float64), group, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k) * scale
    keep = np.ones(s.shape, dtype=bool)
    if mask is not None:
        mask = np.broadcast_to(mask, s.shape)
        if mask.dtype == np.bool_:
            keep &= mask
        else:
            s = s + mask.astype(np.float64)
    if is_causal:
        sq, skv = s.shape[-2:]
        keep &= np.tril(np.ones((sq, skv), dtype=bool))
    s = np.where(keep, s, -np.inf)
    return s


def dropout_keep(shape: tuple[int, int, int, int], dropout_p: float, seed: int, offset: int) -> np.ndarray:
    """The boolean keep-mask of shape (B, Hq, Sq, Skv) that dropout with (seed, offset) draws."""
    index = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    return philox.rand(seed, offset + index) >= np.float32(dropout_p)


def forward(q, k, v, *, mask=None, is_causal=False, scale=None, dropout_p=0.0, seed=0, offset=0):
    """(out, lse, probs): out in float64, lse (B, Hq, Sq) in float64, and the dropped-out P."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = _scores(q, k, mask, is_causal, scale)
    m = s.max(axis=-1, keepdims=True)
    empty = np.isneginf(m)
    e = np.exp(s - np.where(empty, 0.0, m))
    total = e.sum(axis=-1, keepdims=True)
    p = np.where(empty, 0.0, e / np.where(empty, 1.0, total))
    lse = np.where(empty, np.inf, m + np.log(np.where(empty, 1.0, total)))[..., 0]
    if dropout_p > 0.0:
        keep = dropout_keep(p.shape, dropout_p, seed, offset)
        p_drop = np.where(keep, p / (1.0 - dropout_p), 0.0)
    else:
        p_drop = p
    group = q.shape[1] // k.shape[1]
    out = np.einsum("bhij,bhjd->bhid", p_drop, np.repeat(v.astype(np.float64), group, axis=1))
    return out, lse, p_drop


def backward(grad_out, q, k, v, *, mask=None, is_causal=False, scale=None, dropout_p=0.0, seed=0, offset=0):
    """(grad_q, grad_k, grad_v) in float64, summed over each key/value head's query group."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = _scores(q, k, mask, is_causal, scale)
    _, lse, p_drop = forward(
        q, k, v, mask=mask, is_causal=is_causal, scale=scale, dropout_p=dropout_p, seed=seed, offset=offset
    )
    p = np.exp(s - lse[..., None])
    p = np.where(np.isinf(lse)[..., None], 0.0, p)
    b, hkv, skv, d = k.shape
    group = q.shape[1] // hkv
    go = grad_out.astype(np.float64)
    v_rep = np.repeat(v.astype(np.float64), group, axis=1)
    k_rep = np.repeat(k.astype(np.float64), group, axis=1)
    grad_v = np.einsum("bhij,bhid->bhjd", p_drop, go)
    grad_p = np.einsum("bhid,bhjd->bhij", go, v_rep)
    if dropout_p > 0.0:
        keep = dropout_keep(p.shape, dropout_p, seed, offset)
        grad_p = np.where(keep, grad_p / (1.0 - dropout_p), 0.0)
    grad_s = p * (grad_p - (p * grad_p).sum(axis=-1, keepdims=True))
    grad_q = np.einsum("bhij,bhjd->bhid", grad_s, k_rep) * scale
    grad_k = np.einsum("bhij,bhid->bhjd", grad_s, q.astype(np.float64)) * scale
    grad_k = grad_k.reshape(b, hkv, group, skv, d).sum(axis=2)
    grad_v = grad_v.reshape(b, hkv, group, skv, d).sum(axis=2)
    return grad_q, grad_k, grad_v
