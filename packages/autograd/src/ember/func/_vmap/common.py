"""Helpers the rule files share: aligning batched operands, moving dims, looping over lanes."""

from __future__ import annotations

from ember.core.aten.shape.joining import _stack_function as stack_function
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim
from ember.core.tensor import Tensor

aten = ops.aten

INPLACE_ERROR = (
    "vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that has "
    "more elements than `self`. This happened due to `other` being vmapped over but `self` not being vmapped over "
    "{where}. Please try to use out-of-place operators instead of {op}. If said operator is being called inside "
    "the PyTorch framework, please file a bug report instead."
)
# PyTorch words this refusal three ways, by op: kept so that messages match.
_ARITHMETIC = frozenset({"sub_", "mul_", "div_", "copy_"})
_BROADCAST = frozenset({"add_", "atan2_"})


def logical_ndim(call, x) -> int:
    return x.ndim - 1 if call.batched(x) else x.ndim


def pad_to(call, x: Tensor, rank: int) -> Tensor:
    """A batched ``x`` (batch at 0) with size-1 dims after the batch, so its lane has ``rank`` dims."""
    extra = rank - (x.ndim - 1)
    if extra <= 0:
        return x
    # reshape, not unsqueeze: a view here too, and differentiable wherever the value needs a gradient.
    shape = tuple(x.shape)
    return x.reshape((shape[0], *([1] * extra), *shape[1:]))


def check_inplace(call) -> None:
    """In-place ops write one value per lane, so the written tensors must be batched when any input is."""
    if not _writes(call.op):
        return
    written, others = [], []
    for a, value in _bound(call):
        items = value if isinstance(value, list | tuple) else (value,)
        for v in items:
            if isinstance(v, Tensor):
                (written if a.is_write else others).append(v)
    if not written:
        return
    if any(call.batched(v) for v in others) or any(call.batched(v) for v in written):
        for v in written:
            if not call.batched(v):
                _refuse_inplace(call, v, others)


_WRITES: dict = {}


def _writes(op) -> bool:
    """Whether the op writes into an argument (cached: it is asked on every batched call)."""
    found = _WRITES.get(op)
    if found is None:
        found = _WRITES[op] = any(a.is_write for a in op.schema.arguments)
    return found


def _refuse_inplace(call, target: Tensor, others: list) -> None:
    name = call.op.schema.name
    if name in _BROADCAST:
        from ember.core.layout import broadcast_shapes

        rank = max(logical_ndim(call, t) for t in (target, *others))
        shapes = [tuple(pad_to(call, t, rank).shape) if call.batched(t) else tuple(t.shape) for t in (target, *others)]
        raise RuntimeError(
            f"output with shape {list(target.shape)} doesn't match the broadcast shape {list(broadcast_shapes(*shapes))}"
        )
    if name in _ARITHMETIC:
        raise RuntimeError(INPLACE_ERROR.format(op="inplace arithmetic", where="in a vmap"))
    if "pointwise" in call.op.tags:
        raise RuntimeError(INPLACE_ERROR.format(op=f"aten::{name}", where=f"at level {call.level}"))
    raise RuntimeError(INPLACE_ERROR.format(op=name, where="in a vmap"))


def _bound(call):
    args = call.args
    kwargs = call.kwargs
    for i, a in enumerate(call.op.schema.arguments):
        if not a.kwarg_only and i < len(args):
            yield a, args[i]
        elif a.name in kwargs:
            yield a, kwargs[a.name]


def shift(dim: int, ndim: int) -> int:
    """A dim of a lane with ``ndim`` dims, as a dim of the value batched at 0."""
    return normalize_dim(dim, ndim) + 1


def stack_lanes(results: list):
    """Stack per-lane results (tensors, or tuples and lists of them) along a new dim 0. A result
    that every lane leaves out (None: a backward op's output mask) stays None."""
    first = results[0]
    if first is None and all(r is None for r in results):
        return None
    if isinstance(first, Tensor):
        return stack_function(results)
    if isinstance(first, list | tuple):
        parts = [stack_lanes([r[i] for r in results]) for i in range(len(first))]
        if type(first) in (list, tuple):
            return type(first)(parts)
        return type(first)(*parts)
    raise RuntimeError(f"vmap: {type(first).__name__} results cannot be batched")


def lane(call, value, i: int):
    if isinstance(value, Tensor) and call.batched(value):
        return value[i]
    if type(value) in (list, tuple):
        return type(value)(lane(call, v, i) for v in value)
    return value


def loop(call):
    """Run the op once per lane and stack the results.

    Only for ops registered with a reason to loop (their lanes differ in ways one batched call cannot
    express); the lanes still run through the dispatcher, so autograd and outer levels see them.
    """
    check_inplace(call)
    results = []
    for i in range(call.size):
        args = tuple(lane(call, a, i) for a in call.args)
        kwargs = {k: lane(call, v, i) for k, v in call.kwargs.items()}
        results.append(call.op(*args, **kwargs))
    if call.op.schema.is_inplace:
        return None
    return stack_lanes(results)


def unsupported(reason: str):
    def rule(call):
        raise RuntimeError(
            f"vmap: {call.op.namespace}::{call.op.schema.qualified} is not supported inside vmap: {reason}"
        )

    return rule


DYNAMIC_SHAPE = (
    "We do not support batching operators that can output dynamic shape (each lane may give a different shape). "
    "Move the call out of vmap."
)


class Bound:
    """A call's arguments by schema name, that can be changed and turned back into (args, kwargs)."""

    def __init__(self, call) -> None:
        self.op = call.op
        self.schema_args = call.op.schema.arguments
        self.args = list(call.args)
        self.kwargs = dict(call.kwargs)

    def _position(self, name: str) -> int:
        for i, a in enumerate(self.schema_args):
            if a.name == name:
                return -1 if a.kwarg_only else i
        raise KeyError(name)

    def get(self, name: str):
        pos = self._position(name)
        if 0 <= pos < len(self.args):
            return self.args[pos]
        if name in self.kwargs:
            return self.kwargs[name]
        a = self.schema_args[pos] if pos >= 0 else next(x for x in self.schema_args if x.name == name)
        return a.default if a.has_default else None

    def set(self, name: str, value) -> None:
        pos = self._position(name)
        if pos < 0 or name in self.kwargs:
            self.kwargs[name] = value
            return
        if pos > len(self.args) and any(a.name in self.kwargs for a in self.schema_args[len(self.args) : pos]):
            self.kwargs[name] = value  # arguments before it were given by name: so is this one
            return
        while len(self.args) < pos:
            a = self.schema_args[len(self.args)]
            self.args.append(a.default if a.has_default else None)
        if pos < len(self.args):
            self.args[pos] = value
        else:
            self.args.append(value)

    def run(self, op=None):
        return (op or self.op)(*self.args, **self.kwargs)
