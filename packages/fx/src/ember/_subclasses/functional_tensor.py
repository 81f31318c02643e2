"""Functionalization: a program's in-place ops and views replaced by functional ops.

Why a dispatch level rather than a dispatch mode: PyTorch's functionalization sits below autograd
and above the Python modes (its ``Functionalize`` dispatch key), and the dispatcher has that level,
``functionalize``. There, autograd above it records only functional ops (``grad(functionalize(f))``
differentiates ``add`` where ``f`` ran ``add_``), and the modes and subclasses below it (``make_fx``'s
tracer, fake tensors, vmap's batched tensors) see the functional program whatever order they were
entered in. A mode would instead sit among the modes, ordered by entry. ``FunctionalTensorMode``,
PyTorch's name for the switch, enters the level; it is not a ``DispatchMode``.

The design is PyTorch's ``FunctionalTensorWrapper``/``FunctionalStorageImpl``:

- every tensor a functionalized program sees is a ``FunctionalTensor`` wrapping ``value``, a plain
  tensor (or a fake, batched or traced one) holding its current value. Tensors that alias one
  another share a ``FunctionalStorage``: the ``base`` value and the list of pending updates;
- a view op computes the view of the value (the view op, or its ``*_copy`` with
  ``remove="mutations_and_views"``) and records a ``ViewMeta``: the output's chain of views from
  the storage's base;
- an in-place or ``out=`` op runs its functional form on the values, makes the result the mutated
  tensor's value, queues it on the storage as an update (bumping the storage's generation) and
  syncs the tensor;
- a tensor whose generation is behind its storage's is synced before an op reads it: the pending
  updates are written into the base through the inverses of their view chains, and the tensor is
  regenerated from the base by replaying its own chain.

Each active functionalization is a level (1, 2, ... as they nest); the handler takes the tensors of
the innermost visible one, and hides it while the ops it issues run, so those reach the level of an
enclosing functionalization, or the levels below.
"""

from __future__ import annotations

import threading
from typing import Any

from ember._subclasses.functional_views import ViewMeta
from ember.core import dispatch
from ember.core.devices import META
from ember.core.dispatch import OpOverload, ops
from ember.core.storage import Storage
from ember.core.tensor import Tensor, _new, make_wrapper_subclass, note_view

aten = ops.aten

__all__ = ["FunctionalTensor", "FunctionalTensorMode", "from_functional", "has_data_mutation", "sync", "to_functional"]


# -- levels ---------------------------------------------------------------------------------------


class _Level:
    __slots__ = ("depth", "reapply_views")

    def __init__(self, depth: int, reapply_views: bool) -> None:
        self.depth = depth
        self.reapply_views = reapply_views


class _State(threading.local):
    def __init__(self) -> None:
        self.levels: list[_Level] = []
        self.visible = 0  # how many of ``levels`` the ops now running see


_state = _State()
_active = 0  # levels pushed in every thread: the dispatcher's level is on while any is
_lock = threading.Lock()


def _push(reapply_views: bool) -> _Level:
    global _active
    level = _Level(len(_state.levels) + 1, reapply_views)
    _state.levels.append(level)
    _state.visible = len(_state.levels)
    with _lock:
        _active += 1
        dispatch.enable_level("functionalize")
    return level


def _pop(level: _Level) -> None:
    global _active
    if not _state.levels or _state.levels[-1] is not level:
        raise RuntimeError("functionalization levels must be exited in the reverse order they were entered")
    _state.levels.pop()
    _state.visible = len(_state.levels)
    with _lock:
        _active -= 1
        if not _active:
            dispatch.enable_level("functionalize", False)


class _Hidden:
    """``with _Hidden(level):`` ops see only the levels below ``level`` (what the handler issues)."""

    __slots__ = ("depth", "saved")

    def __init__(self, level: _Level) -> None:
        self.depth = level.depth

    def __enter__(self) -> None:
        self.saved = _state.visible
        _state.visible = self.depth - 1

    def __exit__(self, *exc: Any) -> None:
        _state.visible = self.saved


def _visible() -> _Level | None:
    return _state.levels[_state.visible - 1] if _state.visible else None


def _call(level: _Level, op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """Run ``op`` from the top of the dispatcher with ``level`` hidden."""
    with _Hidden(level):
        return op(*args, **kwargs)


# -- storages and tensors -------------------------------------------------------------------------


class FunctionalStorage:
    """What the tensors aliasing one another share: the base value and the updates not yet applied."""

    __slots__ = ("base", "generation", "original", "storage", "updates")

    def __init__(self, base: Tensor) -> None:
        self.base = base
        self.original = base
        self.updates: list[tuple[Tensor, list[ViewMeta]]] = []
        self.generation = 0
        # The Storage the wrappers report: aliases share it, as views share a storage in eager.
        self.storage = Storage(None, base._storage.nbytes, base.device)

    def add_update(self, value: Tensor, metas: list[ViewMeta]) -> None:
        if len(metas) > 1 and any(m.is_as_strided for m in metas[1:]):
            raise RuntimeError(
                "functionalize: a mutation through a chain of views with as_strided() after the first view "
                "cannot be written back to its base (as_strided is not compositional)"
            )
        self.updates.append((value, list(metas)))
        self.generation += 1

    def apply_updates(self, level: _Level) -> None:
        def call(op, args, kwargs):
            return _call(level, op, args, kwargs)

        for value, metas in self.updates:
            if not metas:
                self.base = value
                continue
            bases = [self.base]
            for meta in metas[:-1]:
                bases.append(meta.forward(call, bases[-1]))
            t = value
            for meta, base in zip(reversed(metas), reversed(bases), strict=True):
                t = meta.reverse(call, base, t)
            self.base = t
        self.updates.clear()


class FunctionalTensor(Tensor):
    """A tensor of a functionalized program: see the module docstring."""

    @classmethod
    def __ember_dispatch__(cls, op, types, args, kwargs):
        raise RuntimeError(
            f"{op} was called on a FunctionalTensor outside the functionalization that made it "
            "(a tensor of a functionalize() call or FunctionalTensorMode escaped it)"
        )

    # The wrapped value, synced (PyTorch's ``FunctionalTensor.elem`` is the C++ wrapper; ours is the value).
    @property
    def elem(self) -> Tensor:
        return from_functional(self)

    def __repr__(self) -> str:
        return f"FunctionalTensor({from_functional(self)!r})"

    def item(self):
        return _read(self).item()

    def tolist(self):
        return _read(self).tolist()

    def numpy(self, *, force: bool = False):
        return _read(self).numpy(force=force)

    def __array__(self, dtype=None, copy=None):
        return _read(self).__array__(dtype)

    def __bool__(self) -> bool:
        return bool(_read(self).item())

    # In-place view ops change this tensor's view chain (PyTorch's mutate_view_meta).
    def transpose_(self, dim0: int, dim1: int) -> FunctionalTensor:
        return _mutate_view(self, aten.transpose.int, (dim0, dim1))

    swapaxes_ = swapdims_ = transpose_

    def t_(self) -> FunctionalTensor:
        return _mutate_view(self, aten.t.default, ())

    def unsqueeze_(self, dim: int) -> FunctionalTensor:
        return _mutate_view(self, aten.unsqueeze.default, (dim,))

    def squeeze_(self, dim=None) -> FunctionalTensor:
        if dim is None:
            return _mutate_view(self, aten.squeeze.default, ())
        if isinstance(dim, list | tuple):
            return _mutate_view(self, aten.squeeze.dims, (list(dim),))
        return _mutate_view(self, aten.squeeze.dim, (dim,))

    @staticmethod
    def to_functional(x: Tensor) -> FunctionalTensor:
        """``x`` wrapped for the innermost active functionalization (``FunctionalTensorMode``)."""
        level = _visible()
        if level is None:
            raise RuntimeError("FunctionalTensor.to_functional needs an active FunctionalTensorMode or functionalize()")
        if isinstance(x, FunctionalTensor) and x._level is level:
            return x  # made inside the mode (a factory's output) already
        return to_functional(x, level)

    def from_functional(self) -> Tensor:
        return from_functional(self)


def _wrap(value: Tensor, storage: FunctionalStorage, metas: list[ViewMeta], level: _Level) -> FunctionalTensor:
    t = make_wrapper_subclass(FunctionalTensor, value.shape, value.dtype, value.device, value.stride())
    t._storage = storage.storage
    t._offset = value.storage_offset()
    t._value = value
    t._fstorage = storage
    t._metas = metas
    t._generation = 0
    t._level = level
    t._metadata_mutated = False
    return t


def to_functional(x: Tensor, level: _Level) -> FunctionalTensor:
    """``x`` as a functional tensor of ``level``, the base of a storage of its own."""
    return _wrap(x, FunctionalStorage(x), [], level)


def _set_value(t: FunctionalTensor, value: Tensor) -> None:
    """PyTorch's ``replace_``: the wrapper shows the new value's sizes, and keeps its dtype."""
    if value.dtype != t.dtype:
        value = _call(t._level, aten._to_copy.default, (value,), {"dtype": t.dtype})
    t._value = value
    if t._shape != value._shape:
        # An out= op resized it. Otherwise the wrapper keeps its geometry (a view's, where the value is a copy).
        t._shape, t._stride, t._offset, t._contig = value._shape, value._stride, value.storage_offset(), None


def sync(t: Tensor) -> None:
    """Bring ``t``'s value up to date with the mutations made through its aliases."""
    if not isinstance(t, FunctionalTensor):
        return
    storage = t._fstorage
    if t._generation == storage.generation:
        return
    level = t._level
    storage.apply_updates(level)

    def call(op, args, kwargs):
        return _call(level, op, args, kwargs)

    value = storage.base
    for meta in t._metas:
        value = meta.forward(call, value)
    _set_value(t, value)
    t._generation = storage.generation


def from_functional(t: Tensor) -> Tensor:
    """The current value of a functional tensor (synced); any other tensor as it is."""
    if not isinstance(t, FunctionalTensor):
        return t
    sync(t)
    return t._value


def _read(t: FunctionalTensor) -> Tensor:
    value = from_functional(t)
    return value


def has_data_mutation(t: FunctionalTensor) -> bool:
    """Whether the data of ``t``'s storage was mutated (by ``t`` or an alias)."""
    return t._fstorage.generation > 0


def has_metadata_mutation(t: FunctionalTensor) -> bool:
    """Whether an in-place view op (``transpose_``...) changed ``t``'s sizes or strides."""
    return t._metadata_mutated


def _mutate_view(t: FunctionalTensor, op: OpOverload, args: tuple) -> FunctionalTensor:
    level = t._level
    meta = ViewMeta(op, args, {}, None, level.reapply_views)
    t._metas = [*t._metas, meta]
    t._metadata_mutated = True
    _set_value(t, meta.forward(lambda o, a, k: _call(level, o, a, k), t._value))
    return t


# -- the dispatcher level ---------------------------------------------------------------------------


def _leaves(tree: Any) -> list:
    if isinstance(tree, list | tuple):
        return [x for v in tree for x in _leaves(v)]
    return [tree]


def _map(fn, tree: Any) -> Any:
    if isinstance(tree, list | tuple):
        items = [_map(fn, v) for v in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    if isinstance(tree, dict):
        return {k: _map(fn, v) for k, v in tree.items()}
    return fn(tree)


def _unwrap(level: _Level, tree: Any) -> Any:
    def unwrap(x):
        if isinstance(x, FunctionalTensor) and x._level is level:
            sync(x)
            return x._value
        return x

    return _map(unwrap, tree)


def _fresh(level: _Level, tree: Any) -> Any:
    return _map(lambda x: to_functional(x, level) if isinstance(x, Tensor) else x, tree)


def _handle(op: OpOverload, args: tuple, kwargs: dict, below) -> Any:
    level = _visible()
    if level is None:
        return below(args, kwargs)
    tensors = [x for x in _leaves((args, tuple(kwargs.values()))) if isinstance(x, Tensor)]
    if not any(isinstance(x, FunctionalTensor) and x._level is level for x in tensors):
        if (tensors and op is not aten.lift_fresh.default) or op.form != "functional":
            return below(args, kwargs)
        # A factory, or a tensor made from data (ember.tensor): its output joins the functional program.
        return _fresh(level, _call(level, op, args, kwargs))
    if op.form != "functional" and op.functional is not None:
        # Before any decomposition: an out= decomposition may write into its out tensor directly.
        return _mutation(level, op, args, kwargs)
    if op.decomposition is not None and (op.kind == "composite_implicit" or op is aten.reshape.default):
        # Decomposed above functionalization, as PyTorch's CompositeImplicitAutograd ops are.
        return op.decomposition(*args, **kwargs)
    if op is aten.narrow.default:
        return _narrow(*args, **kwargs)
    if op is aten.slice_inverse.default:
        return _slice_inverse(*args, **kwargs)
    if "view" in op.tags and op.form == "functional" and not op.schema.is_mutable:
        return _view(level, op, args, kwargs)
    if op.schema.is_mutable:
        return _mutation(level, op, args, kwargs)
    return _fresh(level, _call(level, op, _unwrap(level, args), _unwrap(level, kwargs)))


def _narrow(self, dim, start, length):
    # PyTorch's narrow is a composite of slice, so the graph shows slice.
    return aten.slice.Tensor(self, dim, start, start + length)


def _slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    # self's storage read in src's layout: the as_strided view of src's geometry, which has an inverse.
    return aten.as_strided.default(self, list(src.shape), list(src.stride()), src.storage_offset())


def _view(level: _Level, op: OpOverload, args: tuple, kwargs: dict) -> Any:
    self, rest = args[0], args[1:]
    if not isinstance(self, FunctionalTensor) or self._level is not level:
        raise RuntimeError(f"functionalize: {op} of a tensor that is not functional, with functional arguments")
    call_op = op if level.reapply_views else _copy_of(op)
    out = _call(level, call_op, (self._value, *rest), kwargs)
    storage = self._fstorage
    # Autograd above this level sees the wrappers: a view's _base tells it where an in-place change of
    # the view goes, as in eager (detach is no view for autograd there either).
    base = None if op is aten.detach.default else (self if self._base is None else self._base)

    # The wrappers show the view's own sizes, strides and offset even where the value is a contiguous
    # copy (PyTorch's reference metadata): autograd's handling of in-place changes of views reads them.
    reference = None if level.reapply_views else op.meta(_geometry(self), *rest, **kwargs)

    def view(value: Tensor, index: int | None) -> FunctionalTensor:
        t = _wrap(value, storage, [*self._metas, ViewMeta(op, rest, kwargs, index, level.reapply_views)], level)
        if base is not None:
            note_view(t, base)
        if reference is not None:
            ref = reference if index is None else reference[index]
            t._shape, t._stride, t._offset = ref._shape, ref._stride, ref._offset
        return t

    if isinstance(out, list | tuple):
        return type(out)(view(o, i) for i, o in enumerate(out))
    return view(out, None)


def _geometry(t: FunctionalTensor) -> Tensor:
    """A data-less tensor with ``t``'s sizes, strides and offset, for a view op's meta function."""
    return _new(Tensor, Storage(None, t._storage.nbytes, META), t._shape, t._stride, t._offset, t.dtype, None)


def _copy_of(op: OpOverload) -> OpOverload:
    from ember.core.aten.shape.view_copies import copy_of_view

    copy = copy_of_view.get(op)
    if copy is None:
        raise NotImplementedError(f"functionalize(remove='mutations_and_views'): {op} has no *_copy form")
    return copy


def _mutation(level: _Level, op: OpOverload, args: tuple, kwargs: dict) -> Any:
    schema = op.schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    bound = {a.name: v for a, v in zip(positional, args, strict=False)} | kwargs
    mutated = [bound[a.name] for a in schema.arguments if a.is_write and a.name in bound]
    for t in mutated:
        if not isinstance(t, FunctionalTensor):
            raise RuntimeError(
                f"{op}: mutating a non-functional tensor with a functional tensor is not allowed. Please ensure "
                "that all of your inputs are wrapped inside of a functionalize() call."
            )
    functional = op.functional if op.form != "functional" else None
    if functional is not None:
        # The functional form takes the arguments that are not out= ones, in schema order.
        fargs, fkwargs = [], {}
        for a, target in zip(
            [a for a in schema.arguments if not (a.kwarg_only and a.is_write)],
            [a for a in functional.schema.arguments],
            strict=False,
        ):
            if a.name not in bound:
                continue
            if target.kwarg_only:
                fkwargs[target.name] = bound[a.name]
            else:
                fargs.append(bound[a.name])
        fargs, fkwargs = _unwrap(level, tuple(fargs)), _unwrap(level, fkwargs)
        for t in mutated:
            sync(t)  # the out= tensors too, after the inputs: PyTorch syncs every argument in schema order
        result = _call(level, functional, fargs, fkwargs)
        results = list(result) if isinstance(result, list | tuple) else [result]
        new_values = results[: len(mutated)]
    else:
        # No functional form (an op that mutates some of its arguments, like batch norm's running
        # statistics): it runs on copies of the mutated values, which become their new values.
        copies = {id(t): _call(level, aten.clone.default, (from_functional(t),), {}) for t in mutated}

        def unwrap(x):
            if isinstance(x, FunctionalTensor) and x._level is level:
                return copies.get(id(x)) if id(x) in copies else from_functional(x)
            return x

        result = _call(level, op, _map(unwrap, args), _map(unwrap, kwargs))
        new_values = [copies[id(t)] for t in mutated]
    for t, value in zip(mutated, new_values, strict=True):
        t._storage.version += 1  # what autograd's saved-tensor checks read, as an eager in-place op bumps it
        _set_value(t, value)
        t._fstorage.add_update(t._value, t._metas)
        sync(t)
    if functional is None:
        # Outputs other than the mutated arguments are fresh tensors of the program.
        return _map(lambda x: _rewrap(level, x, mutated, new_values), result)
    if op.form == "inplace" or (len(mutated) == 1 and not isinstance(result, list | tuple)):
        return mutated[0]
    return tuple(mutated)


def _rewrap(level: _Level, x: Any, mutated: list, new_values: list) -> Any:
    if not isinstance(x, Tensor):
        return x
    for t, v in zip(mutated, new_values, strict=True):
        if x is v:
            return t
    return to_functional(x, level)


dispatch.install_level("functionalize", _handle)


# -- PyTorch's switch -----------------------------------------------------------------------------


class FunctionalTensorMode:
    """``with FunctionalTensorMode():`` functionalizes the ops on ``FunctionalTensor`` s made inside it
    (``FunctionalTensor.to_functional(x)``); factories made inside it are functional tensors too.

    Views stay view ops, as in ``functionalize(remove="mutations")`` and PyTorch's mode (AOT autograd's
    graphs keep them); ``mode.reapply_views = False`` before entering makes them ``*_copy`` ops.
    """

    def __init__(self, pre_dispatch: bool = False, export: bool = False, _allow_token_discovery: bool = False):
        if pre_dispatch:
            raise NotImplementedError("FunctionalTensorMode(pre_dispatch=True): functionalization runs below autograd")
        self.reapply_views = True
        self.export = export
        self._level: _Level | None = None

    def __enter__(self) -> FunctionalTensorMode:
        if self._level is not None:
            raise RuntimeError("this FunctionalTensorMode is already active")
        self._level = _push(self.reapply_views)
        return self

    def __exit__(self, *exc: Any) -> None:
        level, self._level = self._level, None
        _pop(level)
