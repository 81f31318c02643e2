"""``allow_mutation_on_saved_tensors``: in-place ops on saved tensors, made safe by cloning first.

Two parts work together while the block is active. Saved-tensor hooks keep each saved tensor
under a handle (the same tensor at the same version saved twice shares one), and remember which
saved tensors live in which storage at which version. A dispatch mode sees every op before its
kernel runs: when an op writes into a storage that holds saved tensors at their saved version, it
clones them first, and backward unpacks the clones. Backward must run inside the block too.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import defaultdict

from ember.autograd.graph import saved_tensors_hooks
from ember.core.dispatch import DispatchMode
from ember.core.tensor import Tensor

_active = False


class _Handle:
    __slots__ = ("__weakref__",)


def _tid(t: Tensor) -> tuple:
    return (id(t), id(t._storage), t._version)


def _sid(t: Tensor) -> tuple:
    return (id(t._storage), t._version)


class _AllowMutationOnSavedContext:
    """The state of one block: saved tensors by handle, their clones, and where they live."""

    def __init__(self) -> None:
        self.cloned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.original: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.sid_to_tid: defaultdict = defaultdict(set)

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()


class _SwapWithCloned(saved_tensors_hooks):
    def __init__(self, ctx: _AllowMutationOnSavedContext) -> None:
        def pack(t: Tensor) -> _Handle:
            tid = _tid(t)
            ctx.sid_to_tid[_sid(t)].add(tid)
            handle = ctx.tid_to_weakhandle.get(tid)
            if handle is None:
                handle = _Handle()
                ctx.tid_to_weakhandle[tid] = handle
                ctx.original[handle] = t
            return handle

        def unpack(handle: _Handle) -> Tensor:
            message = (
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' contextin which the graph was "
                "originally recorded."
            )
            if not _active:
                raise AssertionError(message)
            if handle in ctx.cloned:
                return ctx.cloned[handle]
            if handle not in ctx.original:
                raise AssertionError(message)
            return ctx.original[handle]

        super().__init__(pack, unpack)


class _CloneBeforeMutation(DispatchMode):
    def __init__(self, ctx: _AllowMutationOnSavedContext) -> None:
        self.ctx = ctx

    def _clone_saved(self, t: Tensor) -> None:
        ctx = self.ctx
        for tid in ctx.sid_to_tid.get(_sid(t), ()):
            handle = ctx.tid_to_weakhandle.get(tid)
            if handle is None or handle in ctx.cloned:  # freed by a backward already, or cloned once
                continue
            ctx.cloned[handle] = ctx.original.pop(handle).clone()

    def __ember_dispatch__(self, func, types, args, kwargs):
        for i, arg in enumerate(func.schema.arguments):
            if not arg.is_write:
                continue
            value = kwargs.get(arg.name) if arg.kwarg_only or i >= len(args) else args[i]
            for t in value if isinstance(value, list | tuple) else (value,):
                if isinstance(t, Tensor):
                    self._clone_saved(t)
        return func(*args, **kwargs)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Within this block, tensors saved for backward may be modified in place: they are cloned first.

    Run the forward and the backward inside the same block.
    """
    global _active
    ctx = _AllowMutationOnSavedContext()
    with _SwapWithCloned(ctx), _CloneBeforeMutation(ctx):
        try:
            if _active:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _active = True
            yield ctx
        finally:
            ctx.clear()
            _active = False
