"""FlashAttention-2 on the CPU: argument checks in front of the C++ kernel ``_flash_cpu``.

The kernel (``packages/sdpa/csrc/flash_cpu``, built at install time) follows Dao's FlashAttention-2:
online softmax over key tiles in the forward, P recomputed from the saved log-sum-exp in the
backward, tasks of (batch, head, query tile) forward and (batch, key/value head) backward, and
scratch the size of a tile per thread (plus one Sq x D dQ accumulator per backward task), never an
Sq x Skv matrix. It reads every array through its strides (any layout, stride-0 broadcast masks
included) and writes into the caller's outputs; float16 and bfloat16 are converted to float32 tile
by tile as they are read, so no input is copied whole. The conventions (shapes, grouped-query heads,
masks, top-left causal, ``lse = +inf`` for fully masked rows, Philox dropout) are those of
``ember.sdpa.reference``.

A call runs on Ember's CPU threads (``ember.core.threads``, as many as ``get_num_threads()``), each
claiming tasks from the call until none are left, not under OpenMP: OpenMP's idle threads spin on
the cores for a while after each call, where the GEMMs of OpenBLAS that come next in a model need
them (a GPT block's attention took 17 ms between its GEMMs, 3 ms alone). Each output element is one
task's, and the backward splits a head's key tiles by the problem's size only, so the results do
not depend on the thread count.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ember.core import threads
from ember.sdpa.kernels import _flash_cpu

__all__ = ["backward", "forward"]

_DTYPES = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.float16): "float16",
    np.dtype(ml_dtypes.bfloat16): "bfloat16",
}


# Below this many multiply-adds a call runs in the caller alone: waking a worker costs tens of microseconds.
_PARALLEL_MACS = 1 << 21


def _run_parts(tasks: int, macs: int, work) -> None:
    parts = min(threads.get_num_threads(), tasks) if macs >= _PARALLEL_MACS else 1
    threads.run_parts(max(parts, 1), lambda _: work())


def _macs(q: np.ndarray, k: np.ndarray, is_causal: bool) -> int:
    b, h, sq, d = q.shape
    pairs = sq * k.shape[2]
    return 2 * b * h * d * (pairs // 2 if is_causal else pairs)


def _array(name: str, x: object, ndim: int) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise ValueError(f"flash_cpu: {name} must be a NumPy array, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"flash_cpu: {name} must have {ndim} dimensions, got shape {x.shape}")
    if any(s % x.itemsize for s in x.strides):
        raise ValueError(f"flash_cpu: {name} has strides {x.strides} that are not multiples of its itemsize")
    return x


def _check_output(name: str, x: np.ndarray, inputs: dict[str, np.ndarray]) -> None:
    if not x.flags.writeable:
        raise ValueError(f"flash_cpu: {name} is not writeable")
    if x.size == 0:
        return
    # Distinct elements must have distinct addresses: sort dims by stride, each must step past the rest.
    extent = 1
    for stride, size in sorted((abs(st) // x.itemsize, s) for s, st in zip(x.shape, x.strides, strict=True) if s > 1):
        if stride < extent:
            raise ValueError(f"flash_cpu: {name} has overlapping elements (shape {x.shape}, strides {x.strides})")
        extent = stride * size
    for other, y in inputs.items():
        if np.may_share_memory(x, y) and np.shares_memory(x, y):
            raise ValueError(f"flash_cpu: {name} overlaps {other}")


def _prepare(q, k, v, mask, is_causal, scale, dropout_p, seed, offset):
    q, k, v = _array("q", q, 4), _array("k", k, 4), _array("v", v, 4)
    if q.dtype not in _DTYPES:
        raise ValueError(f"flash_cpu: dtype {q.dtype} of q is not supported (float16, bfloat16, float32, float64)")
    for name, x in (("k", k), ("v", v)):
        if x.dtype != q.dtype:
            raise ValueError(f"flash_cpu: {name} has dtype {x.dtype}, q has {q.dtype}")
    b, hq, sq, d = q.shape
    if k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"flash_cpu: k of shape {k.shape} does not match q of shape {q.shape} in batch or head dim")
    if v.shape != k.shape:
        raise ValueError(f"flash_cpu: v has shape {v.shape}, k has {k.shape}")
    hkv = k.shape[1]
    if hkv == 0 or hq % hkv != 0:
        raise ValueError(f"flash_cpu: q's {hq} heads are not a multiple of k's {hkv} heads")
    skv = k.shape[2]
    kind = "none"
    if mask is not None:
        if not isinstance(mask, np.ndarray):
            raise ValueError(f"flash_cpu: mask must be a NumPy array, got {type(mask).__name__}")
        if mask.dtype == np.bool_:
            kind = "bool"
        elif mask.dtype == q.dtype:
            kind = "float"
        else:
            raise ValueError(f"flash_cpu: mask has dtype {mask.dtype}; it must be bool or q's dtype {q.dtype}")
        try:
            mask = np.broadcast_to(mask, (b, hq, sq, skv))
        except ValueError:
            raise ValueError(
                f"flash_cpu: mask of shape {mask.shape} does not broadcast to {(b, hq, sq, skv)}"
            ) from None
        _array("mask", mask, 4)
    if not isinstance(is_causal, bool | np.bool_):
        raise ValueError(f"flash_cpu: is_causal must be a bool, got {type(is_causal).__name__}")
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    if not isinstance(scale, int | float | np.floating) or not math.isfinite(scale):
        raise ValueError(f"flash_cpu: scale must be a finite number, got {scale!r}")
    if not isinstance(dropout_p, int | float | np.floating) or not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"flash_cpu: dropout_p must be a number in [0, 1), got {dropout_p!r}")
    for name, x in (("seed", seed), ("offset", offset)):
        if not isinstance(x, int | np.integer) or isinstance(x, bool):
            raise ValueError(f"flash_cpu: {name} must be an int, got {type(x).__name__}")
    return mask, kind, bool(is_causal), float(scale), float(dropout_p), int(seed) % 2**64, int(offset) % 2**64


def _check_like(name: str, x: object, like: np.ndarray, like_name: str) -> np.ndarray:
    x = _array(name, x, like.ndim)
    if x.shape != like.shape:
        raise ValueError(f"flash_cpu: {name} has shape {x.shape}, expected {like.shape} (the shape of {like_name})")
    if x.dtype != like.dtype:
        raise ValueError(f"flash_cpu: {name} has dtype {x.dtype}, expected {like.dtype} (the dtype of {like_name})")
    return x


def _check_lse(lse: object, q: np.ndarray) -> np.ndarray:
    lse = _array("lse", lse, 3)
    if lse.shape != q.shape[:3]:
        raise ValueError(f"flash_cpu: lse has shape {lse.shape}, expected {q.shape[:3]}")
    if lse.dtype != np.float32 and not (lse.dtype == np.float64 == q.dtype):
        expected = "float32 or float64" if q.dtype == np.float64 else "float32"
        raise ValueError(f"flash_cpu: lse has dtype {lse.dtype}, expected {expected}")
    return lse


def forward(q, k, v, out, lse, *, mask=None, is_causal=False, scale=None, dropout_p=0.0, seed=0, offset=0) -> None:
    """Attention of q (B, Hq, Sq, D) over k, v (B, Hkv, Skv, D) into ``out`` (like q) and ``lse`` (B, Hq, Sq).

    ``lse`` (float32; float32 or float64 beside float64 inputs) receives each row's natural log-sum-exp
    of the scaled, masked scores (``+inf`` where every key is masked out; ``out`` is 0 there), which
    ``backward`` needs.
    """
    mask, kind, is_causal, scale, dropout_p, seed, offset = _prepare(
        q, k, v, mask, is_causal, scale, dropout_p, seed, offset
    )
    out = _check_like("out", out, q, "q")
    lse = _check_lse(lse, q)
    inputs = {"q": q, "k": k, "v": v} | ({} if mask is None else {"mask": mask})
    _check_output("out", out, inputs)
    _check_output("lse", lse, inputs | {"out": out})
    call = _flash_cpu.ForwardCall(
        q, k, v, out, lse, mask, kind, is_causal, scale, dropout_p, seed, offset, _DTYPES[q.dtype]
    )
    _run_parts(call.tasks, _macs(q, k, is_causal), call.run)


def backward(
    grad_out,
    q,
    k,
    v,
    out,
    lse,
    grad_q,
    grad_k,
    grad_v,
    *,
    mask=None,
    is_causal=False,
    scale=None,
    dropout_p=0.0,
    seed=0,
    offset=0,
) -> None:
    """Gradients of attention into ``grad_q`` (like q), ``grad_k`` and ``grad_v`` (like k).

    ``out`` and ``lse`` are what ``forward`` wrote for the same arguments; dropout is redrawn from
    ``(seed, offset)``, so it must be the forward's.
    """
    mask, kind, is_causal, scale, dropout_p, seed, offset = _prepare(
        q, k, v, mask, is_causal, scale, dropout_p, seed, offset
    )
    grad_out = _check_like("grad_out", grad_out, q, "q")
    out = _check_like("out", out, q, "q")
    lse = _check_lse(lse, q)
    grad_q = _check_like("grad_q", grad_q, q, "q")
    grad_k = _check_like("grad_k", grad_k, k, "k")
    grad_v = _check_like("grad_v", grad_v, v, "v")
    inputs = {"grad_out": grad_out, "q": q, "k": k, "v": v, "out": out, "lse": lse}
    inputs |= {} if mask is None else {"mask": mask}
    _check_output("grad_q", grad_q, inputs)
    _check_output("grad_k", grad_k, inputs | {"grad_q": grad_q})
    _check_output("grad_v", grad_v, inputs | {"grad_q": grad_q, "grad_k": grad_k})
    call = _flash_cpu.BackwardCall(
        grad_out,
        q,
        k,
        v,
        out,
        lse,
        grad_q,
        grad_k,
        grad_v,
        mask,
        kind,
        is_causal,
        scale,
        dropout_p,
        seed,
        offset,
        _DTYPES[q.dtype],
    )
    macs = _macs(q, k, is_causal) * 5 // 2  # five tile products to the forward's two
    _run_parts(call.tasks, macs, call.run)
    if call.needs_finish:
        _run_parts(q.shape[0] * k.shape[1], macs, call.finish)
