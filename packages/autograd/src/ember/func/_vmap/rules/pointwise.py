"""Pointwise ops: broadcasting does the batching.

Each batched operand has its batch at dim 0; size-1 dims are inserted after the batch until its lane
has as many dims as the widest operand, and unbatched operands broadcast from the right as they
would have anyway. A lane of the result is then the op on the lanes of the operands.

Type promotion treats a 0-dim tensor as weaker than a dimensioned one; a batched 0-dim lane has a
dimension in its value, so when dtypes differ such operands are first cast to the dtype the lanes
would have promoted to.
"""

from __future__ import annotations

from ember.core.aten.factories.factories import empty_function
from ember.core.dispatch import all_ops
from ember.core.tensor import Tensor
from ember.func._vmap.common import check_inplace, logical_ndim, pad_to
from ember.func._vmap.table import register


def _scalar_dtype_fix(call, tensors: list) -> dict:
    """Casts for batched 0-dim operands whose dtype the batched value would otherwise promote wrongly."""
    if len({t.dtype for t in tensors}) < 2:
        return {}
    zero_dim = [t for t in tensors if call.batched(t) and t.ndim == 1]
    if not zero_dim or all(logical_ndim(call, t) == 0 for t in tensors):
        return {}
    from ember.core.promotion import result_type

    metas = [empty_function(t.shape[1:] if call.batched(t) else t.shape, dtype=t.dtype, device="meta") for t in tensors]
    target = result_type(*metas)
    return {id(t): target for t in zero_dim if t.dtype != target}


_SCALARS: dict = {}


def _scalar_positions(op) -> tuple:
    """Positions and names of the op's number (Scalar) arguments, cached per op."""
    found = _SCALARS.get(op)
    if found is None:
        found = _SCALARS[op] = tuple(
            (i, a.name) for i, a in enumerate(op.schema.arguments) if a.type.base == "Scalar" and not a.kwarg_only
        )
    return found


def pointwise(call):
    check_inplace(call)
    args, kwargs = call.args, call.kwargs
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    rank = max(logical_ndim(call, t) for t in tensors)
    casts = _scalar_dtype_fix(call, tensors) if len(tensors) > 1 else {}

    def fit(a):
        if not isinstance(a, Tensor) or not call.batched(a):
            return a
        if casts and id(a) in casts:
            a = a.to(casts[id(a)])
        return pad_to(call, a, rank)

    if len(tensors) == 1 and not kwargs:  # unary ops: the value goes through as it is
        return call.op(*args)

    for i, name in _scalar_positions(call.op):
        if i < len(args) and call.batched(args[i]):
            raise RuntimeError(
                f"vmap: {call.op} got a batched tensor for the number argument '{name}'; pass it as a tensor "
                "to the Tensor overload instead"
            )
    new_args = tuple(fit(a) for a in args)
    new_kwargs = {k: fit(v) for k, v in kwargs.items()} if kwargs else kwargs
    return call.op(*new_args, **new_kwargs)


def _pointwise_ops():
    return [
        op
        for op in all_ops()
        if "pointwise" in op.tags and op.namespace == "aten" and not op.schema.is_out and "random" not in op.tags
    ]


register(pointwise, *_pointwise_ops())
