"""FlexAttention (``torch.nn.attention.flex_attention``): attention with a user ``score_mod`` and a block mask.

    out = softmax(score_mod(Q Kᵀ · scale, b, h, q_idx, kv_idx), masked by the BlockMask) V

Eager on the CPU, tiled (see ``_flex_tiles``): empty blocks are skipped, full blocks skip the
mask_mod, the softmax is online, and memory stays O(tile). Unlike PyTorch, it has a CPU backward:
an ``autograd.Function`` that recomputes each tile and runs ``score_mod`` under autograd to carry
the gradient into q, k, v and into the tensors score_mod captures (a bias table, ALiBi slopes, ...).
Those are found in the score_mod's closure, defaults, referenced globals and, for a bound method,
its module's parameters; each becomes an input of the Function so its gradient reaches it.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ember.autograd.function import Function
from ember.core import dtypes as D
from ember.core.creation import from_numpy
from ember.core.tensor import Tensor
from ember.nn.attention import _flex_op, _flex_tiles  # noqa: F401  (_flex_op: the ops a captured graph holds)
from ember.nn.attention._block_mask import (
    BlockMask,
    and_masks,
    create_block_mask,
    create_mask,
    noop_mask,
    or_masks,
)

__all__ = [
    "AuxOutput",
    "AuxRequest",
    "BlockMask",
    "and_masks",
    "create_block_mask",
    "create_mask",
    "flex_attention",
    "noop_mask",
    "or_masks",
]


def _compute_dtype(dtype: D.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype is D.float64 else np.dtype(np.float32)


def _captured_tensors(fn: Callable | None) -> list[Tensor]:
    """Tensors requiring grad that ``fn`` reaches through closures, defaults, globals or its module."""
    found: dict[int, Tensor] = {}
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if depth > 4 or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, Tensor):
            if obj.requires_grad:
                found.setdefault(id(obj), obj)
            return
        if isinstance(obj, list | tuple):
            for x in obj:
                visit(x, depth + 1)
            return
        if isinstance(obj, dict):
            for x in obj.values():
                visit(x, depth + 1)
            return
        func = getattr(obj, "func", None)
        if func is not None and hasattr(obj, "args"):  # functools.partial
            visit(func, depth + 1)
            visit(obj.args, depth + 1)
            visit(obj.keywords, depth + 1)
            return
        if callable(getattr(obj, "parameters", None)) and callable(getattr(obj, "buffers", None)):  # a Module
            for t in (*obj.parameters(), *obj.buffers()):
                visit(t, depth + 1)
            return
        owner = getattr(obj, "__self__", None)
        if owner is not None:  # a bound method: what its object holds
            visit(owner, depth + 1)
        code = getattr(obj, "__code__", None)
        if code is None:
            return
        for cell in obj.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell
                visit(cell.cell_contents, depth + 1)
        visit(obj.__defaults__ or (), depth + 1)
        glob = getattr(obj, "__globals__", {})
        for name in code.co_names:
            if name in glob:
                value = glob[name]
                if isinstance(value, Tensor) or getattr(value, "__code__", None) is not None:
                    visit(value, depth + 1)

    visit(fn, 0)
    return list(found.values())


class AuxRequest(NamedTuple):
    """Which auxiliary outputs ``flex_attention`` returns beside the output."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs of ``flex_attention``: None where not requested."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


class _FlexAttentionFunction(Function):
    @staticmethod
    def forward(ctx, query, key, value, score_mod, mask_mod, plan, scale, *captured):
        dt = _compute_dtype(query.dtype)
        q, k, v = (np.asarray(t.detach().numpy(force=True), dtype=dt) for t in (query, key, value))
        out, lse, row_max = _flex_tiles.forward(q, k, v, score_mod, mask_mod, plan, scale)
        ctx.args = (score_mod, mask_mod, plan, scale)
        ctx.arrays = (q, k, v, out, lse)
        # The captured tensors themselves (with their history): backward differentiates score_mod
        # with respect to them.
        ctx.captured = captured
        ctx.dtypes = (query.dtype, key.dtype, value.dtype)
        out_t = from_numpy(out.astype(query.dtype.np, copy=False))
        lse_t = from_numpy(lse if dt == np.float64 else lse.astype(np.float32, copy=False))
        max_t = from_numpy(row_max if dt == np.float64 else row_max.astype(np.float32, copy=False))
        ctx.mark_non_differentiable(max_t)
        return out_t, lse_t, max_t

    @staticmethod
    def backward(ctx, grad_out, grad_lse, grad_max):
        score_mod, mask_mod, plan, scale = ctx.args
        q, k, v, out, lse = ctx.arrays
        captured = ctx.captured
        go = np.zeros_like(out) if grad_out is None else np.asarray(grad_out.detach().numpy(force=True), dtype=q.dtype)
        gl = None if grad_lse is None else np.asarray(grad_lse.detach().numpy(), dtype=q.dtype)
        dq, dk, dv, cap = _flex_tiles.backward(go, gl, q, k, v, out, lse, score_mod, mask_mod, plan, scale, captured)
        dtypes = ctx.dtypes
        grads = [from_numpy(a.astype(d.np, copy=False)) for a, d in zip((dq, dk, dv), dtypes, strict=True)]
        return (*grads, None, None, None, None, *cap)


def _validate(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"flex_attention: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"NYI: {name} must be a 4D tensor, got shape {tuple(t.shape)}")
        if t.device.type != "cpu":
            raise NotImplementedError(f"flex_attention: only the CPU is supported here, got device {t.device}")
    if query.dtype is not key.dtype or query.dtype is not value.dtype:
        raise ValueError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: {query.dtype}, "
            f"key.dtype: {key.dtype}, and value.dtype: {value.dtype} instead."
        )
    if not query.dtype.is_floating_point:
        raise ValueError(f"flex_attention: expected a floating point dtype, got {query.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"Expect query and key/value to have the same embedding dimension but got E={query.shape[-1]} "
            f"and E={key.shape[-1]}."
        )
    if key.shape[:3] != value.shape[:3]:
        raise ValueError(f"key of shape {tuple(key.shape)} and value of shape {tuple(value.shape)} do not match")
    if query.shape[0] != key.shape[0]:
        raise ValueError(
            f"Expect query and key/value to have the same batch size, got {query.shape[0]} and {key.shape[0]}"
        )
    hq, hkv = query.shape[1], key.shape[1]
    if enable_gqa:
        if hkv == 0 or hq % hkv:
            raise ValueError(
                f"Expect number of query heads to be a multiple of kv heads for GQA but got Hq={hq} and Hkv={hkv}."
            )
    elif hq != hkv:
        raise ValueError(
            f"Expect query and key/value to have the same number of heads but got Hq={hq} and Hkv={hkv}. "
            "Try setting enable_gqa=True for GQA."
        )


def _plan(block_mask: BlockMask | None, q_len: int, kv_len: int) -> tuple[_flex_tiles.Plan, Callable]:
    if block_mask is None:
        return _flex_tiles.Plan(None, q_len, kv_len, *_flex_tiles.DENSE_TILE), noop_mask
    if not isinstance(block_mask, BlockMask):
        raise TypeError(f"flex_attention: block_mask must be a BlockMask, got {type(block_mask).__name__}")
    if tuple(block_mask.seq_lengths) != (q_len, kv_len):
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={q_len} and "
            f"kv_len={kv_len}. Create a new BlockMask for these lengths."
        )
    bq, bk = block_mask.BLOCK_SIZE
    return _flex_tiles.Plan(block_mask.status(), q_len, kv_len, bq, bk), block_mask.mask_mod


def flex_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    score_mod: Callable | None = None,
    block_mask: BlockMask | None = None,
    scale: float | None = None,
    enable_gqa: bool = False,
    return_lse: bool = False,
    kernel_options: dict | None = None,
    *,
    return_aux: AuxRequest | None = None,
) -> Tensor | tuple[Tensor, Tensor] | tuple[Tensor, AuxOutput]:
    """Attention of ``query`` (B, Hq, L, E) over ``key``/``value`` (B, Hkv, S, E/Ev) with a score_mod and a BlockMask.

    ``score_mod(score, b, h, q_idx, kv_idx)`` returns the modified score; ``block_mask`` (from
    ``create_block_mask``) says which positions are kept. ``return_lse`` also returns the natural
    log-sum-exp (B, Hq, L) of the modded, masked scores (deprecated as in PyTorch: use
    ``return_aux=AuxRequest(lse=True)``, which can also ask for each row's ``max_scores``).
    ``kernel_options`` is accepted and ignored: the tiles here are chosen for NumPy.
    """
    if return_lse and return_aux is not None:
        raise ValueError(
            "Cannot specify both return_lse and return_aux. return_lse is deprecated, please use "
            "return_aux=AuxRequest(lse=True) instead."
        )
    if return_lse:
        warnings.warn(
            "return_lse is deprecated and will be removed in v2.10. Please use return_aux=AuxRequest(lse=True) instead.",
            FutureWarning,
            stacklevel=2,
        )
    _validate(query, key, value, enable_gqa)
    if score_mod is not None and not callable(score_mod):
        raise TypeError(f"flex_attention: score_mod must be callable, got {type(score_mod).__name__}")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    plan, mask_mod = _plan(block_mask, query.shape[2], key.shape[2])
    captured = _captured_tensors(score_mod)
    out, lse, row_max = _FlexAttentionFunction.apply(query, key, value, score_mod, mask_mod, plan, scale, *captured)
    if return_aux is not None:
        return out, AuxOutput(lse if return_aux.lse else None, row_max if return_aux.max_scores else None)
    return (out, lse) if return_lse else out
