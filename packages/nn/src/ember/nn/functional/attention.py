"""``scaled_dot_product_attention``: PyTorch's front end, choosing a backend for each call.

``ember.sdpa.backends.select`` picks, in priority order among the enabled backends, the first whose
rules the call meets (``ember.nn.attention.explain`` says which and why):

- ``FLASH_ATTENTION``: the FlashAttention-2 kernel through PyTorch's CPU flash op
  (``_scaled_dot_product_flash_attention_for_cpu``; a boolean mask becomes an additive one, as in
  PyTorch), or the Triton kernel through ``_scaled_dot_product_flash_attention`` on CUDA;
- ``EFFICIENT_ATTENTION``: the same CPU kernel through ``_scaled_dot_product_efficient_attention``,
  which takes any broadcastable boolean or additive mask and draws dropout from the Philox stream;
- ``MATH``: the composite below, of core ops.

The ops carry meta functions and derivatives, so autograd, fake tensors and tracing see one op each.

The composite: S = Q Kᵀ · scale (+ float mask, or -inf where a bool mask is False or ``is_causal``
hides), P = softmax(S), dropout(P) with ``dropout_p``, O = P V. ``enable_gqa`` lets key/value have
fewer heads than the query: each key/value head serves ``Hq / Hkv`` consecutive query heads. A query
row whose keys are all masked gives zeros (and zero gradients), not NaN, as PyTorch's kernels do; to
keep NaN out of the gradient too, such rows are softmaxed over zeros and then zeroed.
"""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core.aten.factories.factories import ones_function
from ember.core.aten.pointwise.ternary import where_function
from ember.core.functional import dropout
from ember.core.tensor import Tensor
from ember.sdpa import backends as _backends
from ember.sdpa.backends import SDPBackend
from ember.sdpa.ops import flash_attention_for_cpu
from ember.sdpa.ops_cuda import flash_attention as _flash_attention_cuda
from ember.sdpa.ops_efficient import efficient_attention


def _repeat_heads(t: Tensor, groups: int) -> Tensor:
    shape = list(t.shape)
    expanded = t.unsqueeze(-3).expand(*shape[:-2], groups, *shape[-2:])
    return expanded.reshape(*shape[:-3], shape[-3] * groups, *shape[-2:])


def _additive(mask: Tensor, dtype: D.dtype) -> Tensor:
    """A boolean mask as the additive one PyTorch's front end hands its kernels: 0 kept, -inf hidden."""
    return where_function(mask, 0.0, float("-inf")).to(dtype)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    backend = _backends.select(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if backend is SDPBackend.FLASH_ATTENTION:
        if query.device.type == "cuda":
            return _flash_attention_cuda(query, key, value, 0.0, bool(is_causal), False, scale=scale)[0]
        if attn_mask is not None and attn_mask.dtype is D.bool_:
            attn_mask = _additive(attn_mask, query.dtype)
        elif attn_mask is not None and attn_mask.dtype is not query.dtype:
            attn_mask = attn_mask.to(query.dtype)  # a float32 mask beside bfloat16/float16 inputs
        return flash_attention_for_cpu(query, key, value, 0.0, bool(is_causal), attn_mask=attn_mask, scale=scale)[0]
    if backend is SDPBackend.EFFICIENT_ATTENTION:
        if attn_mask is not None and attn_mask.dtype not in (D.bool_, query.dtype):
            attn_mask = attn_mask.to(query.dtype)
        return efficient_attention(query, key, value, attn_mask, False, float(dropout_p), bool(is_causal), scale=scale)[
            0
        ]
    return _math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa) -> Tensor:
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hkv = query.shape[-3], key.shape[-3]
        if hq % hkv:
            raise RuntimeError(
                f"number of heads in query ({hq}) must be divisible by the number of heads in key/value ({hkv})"
            )
        key, value = _repeat_heads(key, hq // hkv), _repeat_heads(value, hq // hkv)
    length, source = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale_factor
    keep = None
    if is_causal:
        keep = ones_function(length, source, dtype=D.bool_, device=query.device).tril(0)
    elif attn_mask is not None:
        if attn_mask.dtype is D.bool_:
            keep = attn_mask
        else:
            scores = scores + attn_mask
    if keep is not None:
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    empty = (scores == float("-inf")).all(-1, keepdim=True)
    weights = where_function(empty, 0.0, scores).softmax(-1)
    weights = where_function(empty, 0.0, weights)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value
