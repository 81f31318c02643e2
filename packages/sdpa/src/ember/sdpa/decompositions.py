"""The attention ops of ``ember.sdpa.ops`` written in core ops, with S x S score matrices.

    S = Q Kᵀ · scale + mask (-inf above the diagonal when causal),  lse = logsumexp(S),
    P = exp(S - lse),  O = P V;
    dP = dO Vᵀ,  dV = Pᵀ dO,  dS = P ∘ (dP - rowsum(P ∘ dP)),  dQ = dS K · scale,  dK = dSᵀ Q · scale

with key/value heads repeated over their query group (and the group's gradients summed back). A row
whose keys are all masked out gives 0 in the output, the log-sum-exp and the gradients, as the kernels
do. float16 and bfloat16 compute in float32 and round once. vmap batches the ops through these, autograd
differentiates the backward op through its decomposition, and a compiler that would rather not call
the flash kernel can lower them.
"""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core.aten.factories.factories import ones_function
from ember.core.aten.pointwise.ternary import where_function as where
from ember.core.tensor import Tensor

_REDUCED = (D.float16, D.bfloat16)


def _wide(t: Tensor | None) -> Tensor | None:
    return t.to(D.float32) if t is not None and t.dtype in _REDUCED else t


def _repeat_heads(t: Tensor, group: int) -> Tensor:
    if group == 1:
        return t
    b, h, s, d = t.shape
    return t.unsqueeze(2).expand(b, h, group, s, d).reshape(b, h * group, s, d)


def _sum_heads(t: Tensor, group: int) -> Tensor:
    if group == 1:
        return t
    b, h, s, d = t.shape
    return t.reshape(b, h // group, group, s, d).sum([2])


def _scores(q: Tensor, k: Tensor, attn_mask, is_causal: bool, scale) -> Tensor:
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q @ k.transpose(-2, -1)) * scale
    if attn_mask is not None:
        s = s + _wide(attn_mask)
    if is_causal:
        sq, skv = s.shape[-2], s.shape[-1]
        keep = ones_function(sq, skv, dtype=D.bool_, device=q.device).tril(0)
        s = s.masked_fill(keep.logical_not(), float("-inf"))
    return s


def _probabilities(s: Tensor) -> tuple[Tensor, Tensor]:
    """(P, lse) of the scores, 0 in both where a row's scores are all -inf."""
    m = s.amax([-1], True)
    empty = m == float("-inf")
    m = where(empty, 0.0, m)
    e = (s - m).exp()
    total = e.sum([-1], True)
    lse = where(empty, 0.0, m + where(empty, 1.0, total).log())
    return e / where(empty, 1.0, total), lse.squeeze(-1)


def flash_attention_for_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    if dropout_p > 0.0:
        raise RuntimeError("scaled_dot_product_attention_flash_attention: Currently do not support dropout > 0")
    group = query.shape[1] // key.shape[1]
    q, k, v = _wide(query), _repeat_heads(_wide(key), group), _repeat_heads(_wide(value), group)
    p, lse = _probabilities(_scores(q, k, attn_mask, is_causal, scale))
    out = p @ v
    return out.to(query.dtype), lse


def flash_attention_for_cpu_backward(
    grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None, scale=None
):
    if dropout_p > 0.0:
        raise RuntimeError("scaled_dot_product_attention_flash_attention: Currently do not support dropout > 0")
    group = query.shape[1] // key.shape[1]
    q, k, v = _wide(query), _repeat_heads(_wide(key), group), _repeat_heads(_wide(value), group)
    g = _wide(grad_out)
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    # P is recomputed from the scores rather than read back through ``logsumexp``, and rowsum(dO ∘ O)
    # is taken as rowsum(P ∘ dP): the same numbers, but every input's part in them is recorded, so
    # that differentiating this backward (double backward) is right. ``out`` and ``logsumexp`` are
    # the kernel's shortcuts and go unused here.
    p, _ = _probabilities(_scores(q, k, attn_mask, is_causal, scale))
    grad_v = p.transpose(-2, -1) @ g
    grad_p = g @ v.transpose(-2, -1)
    grad_s = p * (grad_p - (p * grad_p).sum([-1], True))
    grad_q = (grad_s @ k) * scale_factor
    grad_k = (grad_s.transpose(-2, -1) @ q) * scale_factor
    return (
        grad_q.to(query.dtype),
        _sum_heads(grad_k, group).to(key.dtype),
        _sum_heads(grad_v, group).to(value.dtype),
    )
