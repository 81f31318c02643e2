"""PyTorch's memory-efficient attention op pair, on the CPU FlashAttention-2 kernel, with dropout.

    _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp,
        dropout_p=0., is_causal=False, *, scale=None) -> (output, log_sumexp, philox_seed, philox_offset)
    _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias, out,
        logsumexp, philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal=False, *, scale=None)
        -> (grad_query, grad_key, grad_value, grad_attn_bias)

This is what ``SDPBackend.EFFICIENT_ATTENTION`` runs on the CPU (PyTorch has these ops on CUDA only).
Beyond the flash op of ``ember.sdpa.ops`` it takes a boolean ``attn_bias`` as well as an additive one
(any shape that broadcasts to (B, Hq, Sq, Skv)) and dropout: the forward reserves B·Hq·Sq·Skv
counters of the default generator's Philox stream and returns their ``(seed, offset)`` as two int64
scalars; the backward redraws the same keep-mask from them (the numbering of ``ember.sdpa.reference``).
Where Ember differs from PyTorch's CUDA op: ``log_sumexp`` is (B, Hq, Sq) (float64 for float64 inputs)
rather than padded to a multiple of 32, ``attn_bias`` of the backward may be None, grouped-query heads
are taken, and no gradient of ``attn_bias`` is computed (``grad_input_mask[3]`` must be False; the
fourth result is an empty tensor).
"""

from __future__ import annotations

import math

import numpy as np

from ember.autograd.registry import derivative, through_decomposition
from ember.core import dtypes as D
from ember.core import generator as _generator
from ember.core.dispatch import define
from ember.core.layout import dense_strides_like
from ember.core.tensor import Tensor, empty
from ember.sdpa import decompositions
from ember.sdpa.ops import check_inputs, lse_dtype

__all__ = ["efficient_attention", "efficient_attention_backward"]

_NAME = "_scaled_dot_product_efficient_attention"

efficient_attention = define(
    "_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, "
    "bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? scale=None) -> "
    "(Tensor output, Tensor log_sumexp, Tensor philox_seed, Tensor philox_offset)",
    ("random",),  # it draws from the default generator, which graph capture must thread through
)
efficient_attention_backward = define(
    "_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, "
    "Tensor? attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, float dropout_p, "
    "bool[4] grad_input_mask, bool is_causal=False, *, float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)"
)


def _check(query, key, value, attn_bias, dropout_p) -> None:
    check_inputs(query, key, value, 0.0, None)
    if not 0.0 <= dropout_p < 1.0:
        raise RuntimeError(f"{_NAME}: dropout_p must be in [0, 1), got {dropout_p}")
    if attn_bias is not None:
        if attn_bias.dtype is not D.bool_ and attn_bias.dtype is not query.dtype:
            raise RuntimeError(
                f"{_NAME}: attn_bias must be bool or of the query's dtype {D.SCALAR_TYPE_NAMES[query.dtype]}, got "
                f"{D.SCALAR_TYPE_NAMES[attn_bias.dtype]}"
            )
        target = (query.shape[0], query.shape[1], query.shape[2], key.shape[2])
        shape = tuple(attn_bias.shape)
        if len(shape) > 4 or any(m not in (1, t) for m, t in zip(reversed(shape), reversed(target), strict=False)):
            raise RuntimeError(f"{_NAME}: attn_bias of shape {list(shape)} does not broadcast to {list(target)}")


def _scale(query: Tensor, scale) -> float:
    return 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)


def _scalar(value: int, device) -> Tensor:
    t = empty((), D.int64, device, ())
    if t._array is not None:
        t._array[...] = np.int64(np.uint64(value % 2**64).astype(np.int64))
    return t


def _forward_outputs(query):
    shape = tuple(query.shape)
    out = empty(shape, query.dtype, query.device, dense_strides_like(shape, tuple(query.stride())))
    b, h, s = shape[:3]
    lse = empty((b, h, s), lse_dtype(query.dtype), query.device, (h * s, s, 1))
    return out, lse


@efficient_attention.register_meta
def _forward_meta(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None):
    _check(query, key, value, attn_bias, dropout_p)
    return (*_forward_outputs(query), _scalar(0, query.device), _scalar(0, query.device))


def _mask(attn_bias):
    return None if attn_bias is None else attn_bias._array


@efficient_attention.register_kernel("cpu")
def _forward_cpu(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None):
    _check(query, key, value, attn_bias, dropout_p)
    out, lse = _forward_outputs(query)
    seed = offset = 0
    if dropout_p > 0.0:
        b, h, sq, _ = query.shape
        seed, offset = _generator.reserve(None, b * h * sq * key.shape[2])
    if out.numel() and key.shape[2]:
        from ember.sdpa.kernels import flash_cpu

        flash_cpu.forward(
            query._array,
            key._array,
            value._array,
            out._array,
            lse._array,
            mask=_mask(attn_bias),
            is_causal=bool(is_causal),
            scale=_scale(query, scale),
            dropout_p=float(dropout_p),
            seed=seed,
            offset=offset,
        )
        np.copyto(lse._array, 0, where=np.isposinf(lse._array))
    elif out.numel():
        out._array[...] = 0
        lse._array[...] = 0
    return out, lse, _scalar(seed, query.device), _scalar(offset, query.device)


def _backward_outputs(query, key):
    grads = [
        empty(tuple(t.shape), t.dtype, t.device, dense_strides_like(tuple(t.shape), tuple(t.stride())))
        for t in (query, key, key)
    ]
    return (*grads, empty((0,), query.dtype, query.device, (1,)))


def _check_backward(query, key, value, attn_bias, dropout_p, grad_input_mask) -> None:
    _check(query, key, value, attn_bias, dropout_p)
    if len(grad_input_mask) > 3 and grad_input_mask[3]:
        raise RuntimeError(f"{_NAME}_backward: the gradient of attn_bias is not implemented")


@efficient_attention_backward.register_meta
def _backward_meta(
    grad_out_,
    query,
    key,
    value,
    attn_bias,
    out,
    logsumexp,
    philox_seed,
    philox_offset,
    dropout_p,
    grad_input_mask,
    is_causal=False,
    *,
    scale=None,
):
    _check_backward(query, key, value, attn_bias, dropout_p, grad_input_mask)
    return _backward_outputs(query, key)


@efficient_attention_backward.register_kernel("cpu")
def _backward_cpu(
    grad_out_,
    query,
    key,
    value,
    attn_bias,
    out,
    logsumexp,
    philox_seed,
    philox_offset,
    dropout_p,
    grad_input_mask,
    is_causal=False,
    *,
    scale=None,
):
    _check_backward(query, key, value, attn_bias, dropout_p, grad_input_mask)
    grads = _backward_outputs(query, key)
    if query.numel() == 0 or key.numel() == 0:
        for g in grads[:3]:
            g._array[...] = 0
        return grads
    from ember.sdpa.kernels import flash_cpu

    flash_cpu.backward(
        grad_out_._array,
        query._array,
        key._array,
        value._array,
        out._array,
        logsumexp._array,
        *(g._array for g in grads[:3]),
        mask=_mask(attn_bias),
        is_causal=bool(is_causal),
        scale=_scale(query, scale),
        dropout_p=float(dropout_p),
        seed=int(philox_seed._array) % 2**64,
        offset=int(philox_offset._array) % 2**64,
    )
    return grads


def _additive(attn_bias, query):
    if attn_bias is None or attn_bias.dtype is not D.bool_:
        return attn_bias
    zero = empty((), query.dtype, query.device, ())
    return zero.zero_().masked_fill(attn_bias.logical_not(), float("-inf"))


@efficient_attention.register_decomposition
def _decomposition(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None):
    if dropout_p > 0.0:
        raise NotImplementedError(f"{_NAME} with dropout has no decomposition into core ops")
    bias = _additive(attn_bias, query)
    if bias is not None and bias.ndim != 4:
        bias = bias.reshape(*([1] * (4 - bias.ndim)), *bias.shape)
    out, lse = decompositions.flash_attention_for_cpu(query, key, value, 0.0, is_causal, attn_mask=bias, scale=scale)
    return out, lse, _scalar(0, query.device), _scalar(0, query.device)


@efficient_attention_backward.register_decomposition
def _backward_decomposition(
    grad_out_,
    query,
    key,
    value,
    attn_bias,
    out,
    logsumexp,
    philox_seed,
    philox_offset,
    dropout_p,
    grad_input_mask,
    is_causal=False,
    *,
    scale=None,
):
    if dropout_p > 0.0:
        raise NotImplementedError(f"{_NAME}_backward with dropout has no decomposition into core ops")
    _check_backward(query, key, value, attn_bias, dropout_p, grad_input_mask)
    bias = _additive(attn_bias, query)
    if bias is not None and bias.ndim != 4:
        bias = bias.reshape(*([1] * (4 - bias.ndim)), *bias.shape)
    grads = decompositions.flash_attention_for_cpu_backward(
        grad_out_, query, key, value, out, logsumexp, 0.0, is_causal, attn_mask=bias, scale=scale
    )
    return (*grads, empty((0,), query.dtype, query.device, (1,)))


# Double backward records the backward's parts (without dropout); without grad, modes see one op.
through_decomposition(efficient_attention_backward)


@derivative(
    efficient_attention,
    save=("query", "key", "value", "attn_bias", "dropout_p", "is_causal", "scale", "result"),
    output_differentiable=(True, False, False, False),
    refuse=("attn_bias",),
)
def _efficient_attention(grad, query, key, value, attn_bias, dropout_p, is_causal, scale, result, **_):
    grad_out = grad[0]
    if grad_out is None:
        return None, None, None, None
    out, lse, seed, offset = result
    grad_q, grad_k, grad_v, _ = efficient_attention_backward(
        grad_out,
        query,
        key,
        value,
        attn_bias,
        out,
        lse,
        seed,
        offset,
        dropout_p,
        [True, True, True, False],
        is_causal,
        scale=scale,
    )
    return grad_q, grad_k, grad_v, None
