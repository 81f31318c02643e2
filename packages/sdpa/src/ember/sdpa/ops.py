"""Attention as dispatcher ops: PyTorch's CPU flash-attention pair, with the FlashAttention-2 kernel.

    _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0., is_causal=False, *,
        attn_mask=None, scale=None) -> (output, logsumexp)
    _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out, logsumexp,
        dropout_p, is_causal, *, attn_mask=None, scale=None) -> (grad_query, grad_key, grad_value)

Each op carries what the dispatcher asks of an op: its schema (PyTorch's, so that graphs and
exported programs name it as PyTorch does), a pure meta function (shapes, dtypes and strides from the
inputs' metadata, so fake tensors, tracing and a compiler can treat the call as one external kernel),
the ``flash_cpu`` kernel for the CPU, and a decomposition into core ops (``ember.sdpa.decompositions``)
that vmap batches through and that autograd differentiates when the backward is itself differentiated.
The forward's derivative, registered here as well, calls the backward op.

What PyTorch's CPU ops do, and so what these do:

- q (B, Hq, Sq, D), k and v (B, Hkv, Skv, D), Hq a multiple of Hkv (grouped-query heads); float32,
  float64, bfloat16 or float16; ``attn_mask`` of q's dtype with 2 or 4 dims, added to the scores and
  broadcast to (B, Hq, Sq, Skv); ``is_causal`` keeps key j for query i when j <= i (top left).
- ``output`` has the query's layout (``empty_like``); ``logsumexp`` is (B, Hq, Sq) laid out as
  (B, Sq, Hq) transposed, in float64 for float64 inputs and float32 otherwise, and 0 for a row whose
  keys are all masked out (whose output is 0). The gradients are laid out as (B, S, H, D) transposed.
- Dropout is refused (PyTorch's CPU kernel has none; its backward takes ``dropout_p`` and ignores it,
  where this one refuses it too rather than return gradients of another function).

Where PyTorch's CPU kernel reads out of bounds or divides by zero (key and value batch sizes that differ
from the query's, Hq not a multiple of Hkv, empty inputs), these raise a RuntimeError or return empty
results.
"""

from __future__ import annotations

import math

import numpy as np

from ember.autograd.registry import derivative, through_decomposition
from ember.core import dtypes as D
from ember.core.dispatch import define
from ember.core.layout import dense_strides_like
from ember.core.tensor import Tensor, empty
from ember.sdpa import decompositions

__all__ = ["flash_attention_for_cpu", "flash_attention_for_cpu_backward"]

_NAME = "scaled_dot_product_attention_flash_attention"
_FLOATS = (D.float32, D.float64, D.bfloat16, D.float16)

flash_attention_for_cpu = define(
    "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0., "
    "bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)"
)
flash_attention_for_cpu_backward = define(
    "_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, "
    "Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, "
    "float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)"
)


# -- checks, shared by the meta functions and the kernels -----------------------------------------


def _same_dtype(expected: D.dtype, got: D.dtype) -> None:
    if got is not expected:
        raise RuntimeError(f"expected scalar type {D.SCALAR_TYPE_NAMES[expected]} but found {D.SCALAR_TYPE_NAMES[got]}")


def lse_dtype(dtype: D.dtype) -> D.dtype:
    """The log-sum-exp's dtype: the kernel's accumulation type (float64 for float64, else float32)."""
    return D.float64 if dtype is D.float64 else D.float32


def check_inputs(query: Tensor, key: Tensor, value: Tensor, dropout_p: float, attn_mask: Tensor | None) -> None:
    """PyTorch's checks of a flash-attention call, and the ones its CPU kernel leaves out; metadata only."""
    if query.dtype not in _FLOATS:
        raise RuntimeError(
            f"{_NAME}: Expected data type in FP32, FP64, BF16, FP16, but got {D.SCALAR_TYPE_NAMES[query.dtype]} "
            "instead."
        )
    _same_dtype(query.dtype, key.dtype)
    _same_dtype(query.dtype, value.dtype)
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise RuntimeError(f"{_NAME}: Accept only 4 dims inputs shape of {{B, H, T, K}}")
    if dropout_p > 0.0:
        raise RuntimeError(f"{_NAME}: Currently do not support dropout > 0")
    b, hq, sq, d = query.shape
    if key.shape[3] != d or value.shape[3] != d:
        raise RuntimeError(f"{_NAME}: Q/K/V should have the same head size")
    if tuple(key.shape) != tuple(value.shape) or key.shape[0] != b:
        raise RuntimeError(
            f"{_NAME}: key {list(key.shape)} and value {list(value.shape)} must have the same shape, with the "
            f"batch size of query {list(query.shape)}"
        )
    hkv = key.shape[1]
    if hkv == 0 or hq % hkv != 0:
        raise RuntimeError(
            f"{_NAME}: number of heads in query ({hq}) must be divisible by the number of heads in key/value ({hkv})"
        )
    if d == 0:
        raise RuntimeError(f"{_NAME}: head size must be positive, got query of shape {list(query.shape)}")
    if attn_mask is not None:
        if attn_mask.dtype is not query.dtype:
            raise RuntimeError(f"{_NAME}: Attention mask is the same data type as query")
        if attn_mask.ndim not in (2, 4):
            raise RuntimeError(f"{_NAME}: Attention mask dim in {{2, 4}}")
        # PyTorch expands the mask's last two dims to (Sq, Skv), with its message; batch and heads are
        # checked here too (its kernel reads past a mask with too few of them).
        mask_shape = (1, 1, *attn_mask.shape) if attn_mask.ndim == 2 else tuple(attn_mask.shape)
        target = (*mask_shape[:2], sq, key.shape[2])
        for i in (2, 3):
            if mask_shape[i] != 1 and mask_shape[i] != target[i]:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target[i]}) must match the existing size ({mask_shape[i]}) "
                    f"at non-singleton dimension {i}.  Target sizes: {list(target)}.  Tensor sizes: "
                    f"{list(mask_shape)}"
                )
        for i, want in ((0, b), (1, hq)):
            if mask_shape[i] != 1 and mask_shape[i] != want:
                raise RuntimeError(
                    f"{_NAME}: attention mask of shape {list(attn_mask.shape)} does not broadcast to "
                    f"{[b, hq, sq, key.shape[2]]}"
                )


def transposed_strides(b, s, h, d=None) -> tuple:
    """Strides of a (B, S, H[, D]) buffer seen as (B, H, S[, D]): PyTorch's layout of lse and gradients."""
    if d is None:
        return (s * h, 1, h)
    return (s * h * d, d, h * d, 1)


# -- the forward ----------------------------------------------------------------------------------


def _forward_outputs(query: Tensor) -> tuple[Tensor, Tensor]:
    b, hq, sq, _ = query.shape
    shape = tuple(query.shape)
    out = empty(shape, query.dtype, query.device, dense_strides_like(shape, tuple(query.stride())))
    lse = empty((b, hq, sq), lse_dtype(query.dtype), query.device, transposed_strides(b, sq, hq))
    return out, lse


@flash_attention_for_cpu.register_meta
def _forward_meta(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    check_inputs(query, key, value, dropout_p, attn_mask)
    return _forward_outputs(query)


def _scale(query: Tensor, scale: float | None) -> float:
    return 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)


@flash_attention_for_cpu.register_kernel("cpu")
def _forward_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    check_inputs(query, key, value, dropout_p, attn_mask)
    out, lse = _forward_outputs(query)
    if out.numel() == 0:
        return out, lse
    if key.shape[2] == 0:  # no keys: every row is fully masked
        out._array[...] = 0
        lse._array[...] = 0
        return out, lse
    from ember.sdpa.kernels import flash_cpu

    flash_cpu.forward(
        query._array,
        key._array,
        value._array,
        out._array,
        lse._array,
        mask=None if attn_mask is None else attn_mask._array,
        is_causal=bool(is_causal),
        scale=_scale(query, scale),
    )
    # The kernel marks fully masked rows with lse = +inf; PyTorch's CPU kernel returns 0 there. Either
    # gives P = exp(-inf - lse) = 0 when the backward recomputes P, so the gradients agree.
    np.copyto(lse._array, 0, where=np.isposinf(lse._array))
    return out, lse


# -- the backward ---------------------------------------------------------------------------------


def _check_backward(grad_out, query, key, value, out, logsumexp, dropout_p, attn_mask) -> None:
    check_inputs(query, key, value, dropout_p, attn_mask)
    for name, t in (("grad_out", grad_out), ("out", out)):
        _same_dtype(query.dtype, t.dtype)
        if tuple(t.shape) != tuple(query.shape):
            raise RuntimeError(
                f"{_NAME}_backward: {name} has shape {list(t.shape)}, expected the query's {list(query.shape)}"
            )
    _same_dtype(lse_dtype(query.dtype), logsumexp.dtype)
    if tuple(logsumexp.shape) != tuple(query.shape[:3]):
        raise RuntimeError(
            f"{_NAME}_backward: logsumexp has shape {list(logsumexp.shape)}, expected {list(query.shape[:3])}"
        )


def _gradient_outputs(query: Tensor, key: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    b, hq, sq, d = query.shape
    hkv, skv = key.shape[1], key.shape[2]
    grad_q = empty(tuple(query.shape), query.dtype, query.device, transposed_strides(b, sq, hq, d))
    kv_strides = transposed_strides(b, skv, hkv, d)
    grad_k = empty(tuple(key.shape), key.dtype, key.device, kv_strides)
    grad_v = empty(tuple(key.shape), key.dtype, key.device, kv_strides)
    return grad_q, grad_k, grad_v


@flash_attention_for_cpu_backward.register_meta
def _backward_meta(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None, scale=None):
    _check_backward(grad_out, query, key, value, out, logsumexp, dropout_p, attn_mask)
    return _gradient_outputs(query, key)


@flash_attention_for_cpu_backward.register_kernel("cpu")
def _backward_cpu(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None, scale=None):
    _check_backward(grad_out, query, key, value, out, logsumexp, dropout_p, attn_mask)
    grads = _gradient_outputs(query, key)
    if query.numel() == 0 or key.numel() == 0:
        for g in grads:
            g._array[...] = 0
        return grads
    from ember.sdpa.kernels import flash_cpu

    flash_cpu.backward(
        grad_out._array,
        query._array,
        key._array,
        value._array,
        out._array,
        logsumexp._array,
        *(g._array for g in grads),
        mask=None if attn_mask is None else attn_mask._array,
        is_causal=bool(is_causal),
        scale=_scale(query, scale),
    )
    return grads


# -- decompositions and the derivative ------------------------------------------------------------

flash_attention_for_cpu.register_decomposition(decompositions.flash_attention_for_cpu)
flash_attention_for_cpu_backward.register_decomposition(decompositions.flash_attention_for_cpu_backward)
# Double backward records the backward's parts; without grad, modes see it as one op.
through_decomposition(flash_attention_for_cpu_backward)


@derivative(
    flash_attention_for_cpu,
    save=("query", "key", "value", "attn_mask", "result"),
    output_differentiable=(True, False),
    refuse=("attn_mask",),
)
def _flash_attention_for_cpu(grad, query, key, value, dropout_p, is_causal, attn_mask, scale, result, **_):
    grad_out = grad[0]
    if grad_out is None:
        return None, None, None, None
    out, logsumexp = result
    grad_q, grad_k, grad_v = flash_attention_for_cpu_backward(
        grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask=attn_mask, scale=scale
    )
    return grad_q, grad_k, grad_v, None
