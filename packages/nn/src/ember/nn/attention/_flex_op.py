"""FlexAttention as a pair of dispatcher ops, the form a captured graph holds it in.

    higher_order.flex_attention(query, key, value, str spec, float scale)
        -> (output, logsumexp, max_scores)
    higher_order.flex_attention_backward(grad_out, grad_logsumexp?, query, key, value, out, logsumexp,
        str spec, float scale) -> (grad_query, grad_key, grad_value)

A graph cannot hold Python callables as op arguments, so what is not a tensor (the ``score_mod``,
the BlockMask's ``mask_mod``, its block status and block sizes) is kept in a ``FlexSpec`` and the
op names it by ``spec``, a key into this process's table of specs (``register_spec``). Capture
(``ember.dynamo``) makes the spec when it meets a call of ``flex_attention``, guarding on the
identity of the score_mod and of the BlockMask; the code generator (``ember.inductor``) reads the
spec to trace the mods into one generated kernel. The keys name objects of this process only, so a
graph holding these ops is never put in an on-disk cache.

The CPU kernels are the eager tiled ones (``_flex_tiles``); the forward's derivative calls the
backward op. Tensors a score_mod captures take no gradient through these ops: capture keeps calls
whose score_mod captures tensors that require grad out of the graph (they run eagerly, where they do).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.creation import from_numpy
from ember.core.dispatch import define
from ember.core.tensor import Tensor, empty
from ember.nn.attention import _flex_tiles

__all__ = ["FlexSpec", "flex_attention_backward_op", "flex_attention_op", "lookup_spec", "register_spec"]


@dataclass(frozen=True, eq=False)
class FlexSpec:
    """What a flex_attention call is beside its tensors. ``status`` is the BlockMask's (Bm, Hm, nq, nkv)
    int8 block status (0 empty, 1 partial, 2 full), ``None`` without a BlockMask (every block full)."""

    score_mod: Callable | None
    mask_mod: Callable | None
    status: np.ndarray | None
    q_len: int
    kv_len: int
    q_block: int
    kv_block: int

    def plan(self) -> _flex_tiles.Plan:
        if self.status is None:
            return _flex_tiles.Plan(None, self.q_len, self.kv_len, *_flex_tiles.DENSE_TILE)
        return _flex_tiles.Plan(self.status, self.q_len, self.kv_len, self.q_block, self.kv_block)


_SPECS: dict[str, FlexSpec] = {}
_counter = itertools.count()


def register_spec(spec: FlexSpec) -> str:
    """Keep ``spec`` for the life of the process; the key the ops name it by."""
    key = f"flex_spec_{next(_counter)}"
    _SPECS[key] = spec
    return key


def lookup_spec(key: str) -> FlexSpec:
    try:
        return _SPECS[key]
    except KeyError:
        raise RuntimeError(
            f"flex_attention: no spec {key!r} in this process (a graph holding flex_attention cannot be loaded "
            "from another process; compile it again)"
        ) from None


flex_attention_op = define(
    "flex_attention(Tensor query, Tensor key, Tensor value, str spec, float scale) "
    "-> (Tensor output, Tensor logsumexp, Tensor max_scores)",
    namespace="higher_order",
)
flex_attention_backward_op = define(
    "flex_attention_backward(Tensor grad_out, Tensor? grad_logsumexp, Tensor query, Tensor key, Tensor value, "
    "Tensor out, Tensor logsumexp, str spec, float scale) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
    namespace="higher_order",
)


def lse_dtype(dtype: D.dtype) -> D.dtype:
    """The log-sum-exp's (and row max's) dtype: float64 for float64 inputs, else float32, as eager's."""
    return D.float64 if dtype is D.float64 else D.float32


@flex_attention_op.register_meta
def _forward_meta(query, key, value, spec, scale):
    b, hq, lq, _ = query.shape
    out = empty((b, hq, lq, value.shape[3]), query.dtype, query.device)
    stats = lse_dtype(query.dtype)
    return out, empty((b, hq, lq), stats, query.device), empty((b, hq, lq), stats, query.device)


def _compute(t: Tensor) -> np.ndarray:
    dt = np.float64 if t.dtype is D.float64 else np.float32
    return np.asarray(t.detach().numpy(force=True), dtype=dt)


@flex_attention_op.register_kernel("cpu")
def _forward_cpu(query, key, value, spec, scale):
    s = lookup_spec(spec)
    q, k, v = _compute(query), _compute(key), _compute(value)
    out, lse, row_max = _flex_tiles.forward(q, k, v, s.score_mod, s.mask_mod, s.plan(), float(scale))
    stats = lse_dtype(query.dtype).np
    return (
        from_numpy(out.astype(query.dtype.np, copy=False)),
        from_numpy(lse.astype(stats, copy=False)),
        from_numpy(row_max.astype(stats, copy=False)),
    )


@flex_attention_backward_op.register_meta
def _backward_meta(grad_out, grad_logsumexp, query, key, value, out, logsumexp, spec, scale):
    return (
        empty(tuple(query.shape), query.dtype, query.device),
        empty(tuple(key.shape), key.dtype, key.device),
        empty(tuple(value.shape), value.dtype, value.device),
    )


@flex_attention_backward_op.register_kernel("cpu")
def _backward_cpu(grad_out, grad_logsumexp, query, key, value, out, logsumexp, spec, scale):
    s = lookup_spec(spec)
    q, k, v = _compute(query), _compute(key), _compute(value)
    go = np.asarray(grad_out.detach().numpy(force=True), dtype=q.dtype)
    gl = None if grad_logsumexp is None else np.asarray(grad_logsumexp.detach().numpy(force=True), dtype=q.dtype)
    o = np.asarray(out.detach().numpy(force=True), dtype=q.dtype)
    lse = np.asarray(logsumexp.detach().numpy(force=True), dtype=q.dtype)
    dq, dk, dv, _ = _flex_tiles.backward(go, gl, q, k, v, o, lse, s.score_mod, s.mask_mod, s.plan(), float(scale), [])
    return tuple(from_numpy(a.astype(t.dtype.np, copy=False)) for a, t in zip((dq, dk, dv), (query, key, value),
                 strict=True))  # fmt: skip


@derivative(flex_attention_op, save=("query", "key", "value", "result"), output_differentiable=(True, True, False))
def _flex_attention_derivative(grad, query, key, value, spec, scale, result, **_):
    grad_out, grad_lse = grad[0], grad[1]
    out, lse, _max = result
    if grad_out is None and grad_lse is None:
        return None, None, None
    if grad_out is None:
        grad_out = out.new_zeros(tuple(out.shape))
    return flex_attention_backward_op(grad_out, grad_lse, query, key, value, out, lse, spec, scale)
