"""The view relation between batched tensors, which autograd needs for in-place ops on views.

A view op on a ``BatchedTensor`` runs its rule on the wrapper's value, and the value it returns is a
view of the input's value, but the new wrapper knows nothing of that: without more, autograd sees
``r[1:].mul_(w)`` as an op on an unrelated tensor and never updates ``r``'s history, so ``grad``
inside ``vmap`` silently misses the write. ``link_views`` gives such an output the base wrapper as
``_base``, as a view op on an ordinary tensor does, and a ``_view_fn`` that replays the view ops from
that base: a wrapper's sizes and strides are those of one lane and do not locate it in memory, so
autograd finds the view inside its base by replaying (``ember.autograd.view_replay``).

A rule that cannot return a view of the value (it copied) marks the output ``_copied_view``: an
in-place op on it would not reach the base, and is refused (``table.run_rule``). ``reshape`` is the
exception: it copies where one lane would copy too, so its copy is a new tensor, as without vmap.
"""

from __future__ import annotations

from ember.core.dispatch import ops
from ember.core.tensor import note_view

# Shares the storage but is no view for autograd, on batched tensors as on others.
_DETACH = ops.aten.detach.default
# Returns a copy when the sizes cannot be viewed. The batch stays a dimension of its own in front, so
# the batched value has to be copied exactly when one lane would be: the output is then a new tensor.
_MAY_COPY = (ops.aten.reshape.default,)


def _replay(op, rest: tuple, kwargs: dict, parent, index, t):
    x = t if parent is None else parent(t)
    out = op(x, *rest, **kwargs)
    return out if index is None else out[index]


class _ViewFn:
    """``t -> op(parent(t), *rest, **kwargs)[index]``: one view op appended to the chain from the base."""

    __slots__ = ("index", "kwargs", "op", "parent", "rest")

    def __init__(self, op, rest: tuple, kwargs: dict, parent, index) -> None:
        self.op, self.rest, self.kwargs, self.parent, self.index = op, rest, kwargs, parent, index

    def __call__(self, t):
        return _replay(self.op, self.rest, self.kwargs, self.parent, self.index, t)

    def __repr__(self) -> str:
        return f"{self.parent!r}.{self.op}" if self.parent is not None else f"{self.op}"


def link_views(op, args: tuple, kwargs: dict, out) -> None:
    """Record that the wrappers ``op`` returned are views of ``args[0]`` (see the module docstring)."""
    if op is _DETACH:
        return
    source = args[0]
    state = source.__dict__
    is_view = source._base is not None and "_view_fn" in state
    base = source._base if is_view else source
    parent = state["_view_fn"] if is_view else None
    several = isinstance(out, tuple | list)
    batched = type(source)  # a view op reaches a rule through its batched first argument
    for i, o in enumerate(out if several else (out,)):
        if type(o) is not batched:
            continue
        if "_copied_view" in state:
            o._copied_view = state["_copied_view"]
        elif o._value._storage is not source._value._storage:
            if op not in _MAY_COPY:
                o._copied_view = f"{op} on a batched tensor"
        else:
            note_view(o, base)
            o._view_fn = _ViewFn(op, args[1:], kwargs, parent, i if several else None)
