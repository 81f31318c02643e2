"""PyTorch's CUDA flash-attention op, with the Triton FlashAttention-2 kernel as its ``cuda`` kernel.

    _scaled_dot_product_flash_attention(query, key, value, dropout_p=0., is_causal=False,
        return_debug_mask=False, *, scale=None) -> (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
        rng_state, unused, debug_attn_mask)

Registering a kernel for the device type ``cuda`` is an entry in the op's table; it needs neither the
cuda device plugin nor Triton until a CUDA tensor reaches it. The meta function gives what PyTorch's
does: ``output`` laid out like the query, ``logsumexp`` (B, Hq, Sq) contiguous float32, ``None`` for the
two cumulative-length tensors (dense batches have none), the two sequence lengths, a Philox state of
two int64 and an empty int64 (PyTorch's are uint64, a dtype Ember lacks), and an empty debug mask.

What the kernel does not do raises a RuntimeError: dropout (its Philox state would need the backward
op, ``_scaled_dot_product_flash_attention_backward``, which is not registered yet), the debug mask, and
``is_causal`` with Sq != Skv (PyTorch's CUDA kernel aligns the causal mask to the bottom right there,
this one to the top left). Inputs are float16, bfloat16 or float32 (PyTorch's CUDA kernel refuses the
last; the Triton kernel computes it in IEEE float32). Autograd differentiates the op through its
decomposition (``ember.sdpa.decompositions``, core ops), which is also what vmap batches.
"""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core.dispatch import define
from ember.core.dispatch import ops as _ops
from ember.core.layout import contiguous_strides, dense_strides_like
from ember.core.tensor import Tensor, empty
from ember.sdpa import decompositions

__all__ = ["flash_attention"]

_NAME = "_scaled_dot_product_flash_attention"
_FLOATS = (D.float16, D.bfloat16, D.float32)

flash_attention = define(
    "_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0., "
    "bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) -> (Tensor output, "
    "Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, Tensor rng_state, "
    "Tensor unused, Tensor debug_attn_mask)"
)


def _check(query: Tensor, key: Tensor, value: Tensor, dropout_p: float, is_causal: bool, debug: bool) -> None:
    if query.dtype not in _FLOATS:
        raise RuntimeError(
            f"{_NAME}: expected query of dtype float16, bfloat16 or float32, got {D.SCALAR_TYPE_NAMES[query.dtype]}"
        )
    for t in (key, value):
        if t.dtype is not query.dtype:
            raise RuntimeError(
                f"expected scalar type {D.SCALAR_TYPE_NAMES[query.dtype]} but found {D.SCALAR_TYPE_NAMES[t.dtype]}"
            )
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise RuntimeError(f"{_NAME}: expected 4-dimensional query, key and value (B, H, S, D)")
    b, hq, sq, d = query.shape
    if tuple(key.shape) != tuple(value.shape) or key.shape[0] != b or key.shape[3] != d:
        raise RuntimeError(
            f"{_NAME}: key {list(key.shape)} and value {list(value.shape)} do not match query {list(query.shape)}"
        )
    hkv = key.shape[1]
    if hkv == 0 or hq % hkv != 0:
        raise RuntimeError(
            f"{_NAME}: number of heads in query ({hq}) must be divisible by the number of heads in key/value ({hkv})"
        )
    if dropout_p > 0.0:
        raise RuntimeError(f"{_NAME}: dropout is not supported by Ember's Triton kernel yet")
    if debug:
        raise RuntimeError(f"{_NAME}: return_debug_mask=True is not supported")
    if is_causal and sq != key.shape[2]:
        raise RuntimeError(f"{_NAME}: is_causal needs equal query and key lengths, got {sq} and {key.shape[2]}")


def _allocate(shape: tuple, stride: tuple, dtype: D.dtype, like: Tensor) -> Tensor:
    if like.device.type in ("cpu", "meta"):
        return empty(shape, dtype, like.device, stride)
    # Other devices allocate through their backend's kernel.
    return _ops.aten.empty_strided.default(list(shape), list(stride), dtype=dtype, device=like.device)


def _outputs(query: Tensor, key: Tensor) -> tuple:
    b, hq, sq, _ = query.shape
    shape = tuple(query.shape)
    out = _allocate(shape, dense_strides_like(shape, tuple(query.stride())), query.dtype, query)
    lse = _allocate((b, hq, sq), contiguous_strides((b, hq, sq)), D.float32, query)
    rng_state = _allocate((2,), (1,), D.int64, query)
    unused = _allocate((), (), D.int64, query)
    debug = _allocate((0,), (1,), query.dtype, query)
    return out, lse, None, None, sq, key.shape[2], rng_state, unused, debug


@flash_attention.register_meta
def _meta(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    _check(query, key, value, dropout_p, is_causal, return_debug_mask)
    return _outputs(query, key)


@flash_attention.register_kernel("cuda")
def _cuda(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    _check(query, key, value, dropout_p, is_causal, return_debug_mask)
    results = _outputs(query, key)
    out, lse, rng_state, unused = results[0], results[1], results[6], results[7]
    rng_state.zero_()
    unused.zero_()
    if out.numel() and key.shape[2]:
        from ember.sdpa.kernels import flash_triton

        scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
        flash_triton.forward(query, key, value, out, lse, is_causal=bool(is_causal), scale=scale)
    elif out.numel():  # no keys: zeros, as for fully masked rows
        out.zero_()
        lse.zero_()
    return results


@flash_attention.register_decomposition
def _decomposition(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    _check(query, key, value, dropout_p, is_causal, return_debug_mask)
    out, lse = decompositions.flash_attention_for_cpu(query, key, value, 0.0, is_causal, scale=scale)
    results = _outputs(query, key)
    results[6].zero_()
    results[7].zero_()
    return (out, lse.to(D.float32), *results[2:])
