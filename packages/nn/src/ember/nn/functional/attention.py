"""``scaled_dot_product_attention`` as a composite of core ops, with PyTorch's semantics.

    S = Q Kᵀ · scale (+ float mask, or -inf where a bool mask is False or ``is_causal`` hides),
    P = softmax(S), dropout(P) with ``dropout_p``, O = P V.

``enable_gqa`` lets key/value have fewer heads than the query: each key/value head serves
``Hq / Hkv`` consecutive query heads. A query row whose keys are all masked gives zeros (and zero
gradients), not NaN, as PyTorch's kernels do; to keep NaN out of the gradient too, such rows are
softmaxed over zeros and then zeroed. The kernels of ``ember.sdpa`` compute the same function.
"""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core.aten.factories.factories import ones_function
from ember.core.aten.pointwise.ternary import where_function
from ember.core.functional import dropout
from ember.core.tensor import Tensor


def _repeat_heads(t: Tensor, groups: int) -> Tensor:
    shape = list(t.shape)
    expanded = t.unsqueeze(-3).expand(*shape[:-2], groups, *shape[-2:])
    return expanded.reshape(*shape[:-3], shape[-3] * groups, *shape[-2:])


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
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if query.dtype is not key.dtype or query.dtype is not value.dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead."
        )
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
