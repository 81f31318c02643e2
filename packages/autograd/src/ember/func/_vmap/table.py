"""The batching-rule table: one rule per op, keyed by the op object, like the derivative table.

A rule is registered in the ``rules/<kind>.py`` file of its op::

    @batch_rule(aten.sin.default)
    def _(call):
        return call.op(*call.args, **call.kwargs)

It gets a ``Call``: the op, its arguments with every tensor batched at the running level replaced by
its value with the batch at dimension 0 (``call.batched(x)`` tells which they are), the batch size
and the level. It returns what the op returns, with every tensor batched at dimension 0; the
dispatcher wraps them again. An in-place op returns its (wrapped) ``self`` whatever the rule returns.

An op with no rule batches through its decomposition when it has one (the decomposition's ops are
then batched one by one); otherwise the call raises. ``missing()`` lists the ops in neither case,
and a test keeps it empty.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.core.dispatch import OpOverload, all_ops
from ember.core.tensor import Tensor
from ember.func._vmap.batched import BatchedTensor, front, state, wrap
from ember.func._vmap.views import link_views

RULES: dict[OpOverload, Callable] = {}


def batch_rule(*ops: OpOverload) -> Callable[[Callable], Callable]:
    def register(rule: Callable) -> Callable:
        for op in ops:
            if not isinstance(op, OpOverload):
                raise TypeError(f"batch_rule(): expected an OpOverload, got {op!r}")
            if op in RULES:
                raise RuntimeError(f"the batching rule of {op} is defined twice")
            RULES[op] = rule
        return rule

    return register


def register(rule: Callable, *ops: OpOverload) -> None:
    batch_rule(*ops)(rule)


class Call:
    """One op call at one vmap level, with the batched tensors' values batched at dimension 0."""

    __slots__ = ("_ids", "args", "kwargs", "level", "op", "randomness", "size")

    def __init__(self, op, args: tuple, kwargs: dict, level, ids: set) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.level = level.depth
        self.size = level.size
        self.randomness = level.randomness
        self._ids = ids

    def batched(self, x) -> bool:
        return isinstance(x, Tensor) and id(x) in self._ids

    def mark(self, x: Tensor) -> Tensor:
        """Treat ``x`` (a tensor made by the rule, batched at 0) as batched."""
        self._ids.add(id(x))
        return x

    def expand(self, x: Tensor) -> Tensor:
        """``x`` batched at 0: as it is when batched, else the same tensor for every lane (a view)."""
        if self.batched(x):
            return x
        shape = tuple(x.shape)
        return self.mark(x.reshape((1, *shape)).expand((self.size, *shape)))

    def __repr__(self) -> str:
        return f"Call({self.op}, level={self.level}, size={self.size})"


_LEAKED = (
    "vmap: {op} got a batched tensor from a vmap that has already returned (a batched tensor leaked out of its "
    "vmap, for example through a global or a closure)"
)


def _unwrap(value, depth: int, ids: set, level=None, op=None):
    if type(value) is BatchedTensor and value._level == depth:
        if value._owner is not level:
            raise RuntimeError(_LEAKED.format(op=op))
        v = front(value)
        ids.add(id(v))
        return v
    if type(value) in (list, tuple):
        return type(value)(_unwrap(v, depth, ids, level, op) for v in value)
    return value


def _rewrap(value, depth: int):
    if isinstance(value, Tensor):
        return wrap(value, 0, depth)
    if type(value) in (list, tuple):
        return type(value)(_rewrap(v, depth) for v in value)
    if isinstance(value, tuple):  # a named tuple of results (values, indices)
        return type(value)(*(_rewrap(v, depth) for v in value))
    return value


def _depth(args: tuple, kwargs: dict) -> int:
    depth = 0
    for a in (*args, *kwargs.values()):
        if type(a) is BatchedTensor:
            depth = max(depth, a._level)
        elif type(a) in (list, tuple):
            for b in a:
                if type(b) is BatchedTensor:
                    depth = max(depth, b._level)
    return depth


def run_rule(op: OpOverload, args: tuple, kwargs: dict):
    depth = _depth(args, kwargs)
    if depth > len(state.levels) or depth > state.visible:
        raise RuntimeError(_LEAKED.format(op=op))
    rule = RULES.get(op)
    if rule is None:
        if op.decomposition is not None:
            return op.decomposition(*args, **kwargs)
        if op in sparse_ops():
            raise RuntimeError(
                f"vmap: {op.namespace}::{op.schema.qualified} works on sparse tensors, which vmap does not batch "
                "(as in PyTorch); densify with to_dense() first or move the call out of vmap."
            )
        raise RuntimeError(
            f"vmap: no batching rule for {op.namespace}::{op.schema.qualified}, and it has no decomposition to batch "
            "through. Move the call out of vmap, or register a rule with ember.func._vmap.table.batch_rule."
        )
    level = state.levels[depth - 1]
    writes_self = _writes_self(op)
    if writes_self and type(args[0]) is BatchedTensor and "_copied_view" in args[0].__dict__:
        raise RuntimeError(
            f"vmap: {op} writes in place to the result of a view op whose batching rule had to copy "
            f"({args[0]._copied_view}), so the write would not reach the tensor it was taken from. Make the "
            "tensor contiguous before taking the view, or use the out-of-place op."
        )
    ids: set = set()
    new_args = tuple([_unwrap(a, depth, ids, level, op) for a in args])
    new_kwargs = {k: _unwrap(v, depth, ids, level, op) for k, v in kwargs.items()} if kwargs else kwargs
    call = Call(op, new_args, new_kwargs, level, ids)
    saved = state.visible
    state.visible = depth - 1  # the rule sees only the levels below this one (as ``Hidden`` does)
    try:
        result = rule(call)
    finally:
        state.visible = saved
    if writes_self:
        return args[0]
    out = _rewrap(result, depth)
    if "view" in op.tags and type(args[0]) is BatchedTensor and args[0]._level == depth:
        link_views(op, args, kwargs, out)
    return out


_WRITES_SELF: dict = {}


def _writes_self(op: OpOverload) -> bool:
    """In-place ops (``self`` written): they return their own wrapped ``self``. Cached per op."""
    found = _WRITES_SELF.get(op)
    if found is None:
        first = op.schema.arguments[0] if op.schema.arguments else None
        found = _WRITES_SELF[op] = first is not None and first.is_write and not first.kwarg_only
    return found


def sparse_ops() -> frozenset:
    """The sparse layout's own ops: vmap refuses them, as PyTorch's does."""
    from ember.core.aten.sparse import coo_ops

    return frozenset(v for v in vars(coo_ops).values() if isinstance(v, OpOverload))


def missing() -> list[OpOverload]:
    """Ops that take a tensor and have neither a batching rule, nor a decomposition, nor a reason to
    have none (the sparse ops)."""
    out = []
    refused = sparse_ops()
    for op in all_ops():
        if op in refused:
            continue
        if op.namespace != "aten":
            continue
        if not any(a.type.base == "Tensor" for a in op.schema.arguments):
            continue
        if op not in RULES and op.decomposition is None:
            out.append(op)
    return out
