"""Which sizes are symbolic at a compile: the per-code-object state of automatic dynamic shapes.

The first compile of a frame is static (every size a constant, guarded), unless ``dynamic=True`` or
the user marked a dimension with ``mark_dynamic``. When a call then fails a size guard, the frame
recompiles and each dimension whose size differs from what an earlier compile saw becomes dynamic
(``config.automatic_dynamic_shapes``, as in PyTorch): a function called with batch sizes 4, 6, 8, ...
compiles twice, not once per size. Integer arguments follow the same rule. ``mark_static`` and
``dynamic=False`` keep dimensions static.

Capture asks the ``FrameState`` of the frame's code object, input by input:
``dynamic_dims(source_name, tensor) -> set[int]`` and ``dynamic_scalar(source_name, value) -> bool``.
"""

from __future__ import annotations

import weakref
from types import CodeType
from typing import Any

from ember.dynamo import config
from ember.dynamo._logging import dynamic_log
from ember.dynamo.guards import user_name
from ember.nn.parameter import Parameter

_DYNAMIC = "_dynamo_dynamic_indices"  # PyTorch's attribute names, read by code that checks for marks
_WEAK_DYNAMIC = "_dynamo_weak_dynamic_indices"
_STATIC = "_dynamo_static_indices"
_DYNAMIC_RANGES = "_dynamo_dynamic_range"


class FrameState:
    """What earlier compiles of one code object saw, and which inputs became dynamic."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.dynamic: bool | None = None  # the ``dynamic=`` of the compile in progress
        self.sizes: dict[str, tuple[int, ...]] = {}
        self.dynamic_dims_of: dict[str, set[int]] = {}
        self.scalars: dict[str, Any] = {}
        self.dynamic_scalars: set[str] = set()

    def dynamic_dims(self, source_name: str, tensor: Any) -> set[int]:
        """The dimensions of ``tensor`` (read from ``source_name``) to make symbolic in this compile."""
        if config.force_parameter_static_shapes and isinstance(tensor, Parameter):
            return set()
        sizes = tuple(int(s) for s in tensor.shape)
        seen = self.sizes.get(source_name)
        grown = self.dynamic_dims_of.setdefault(source_name, set())
        if config.automatic_dynamic_shapes and seen is not None and len(seen) == len(sizes):
            for dim, (was, now) in enumerate(zip(seen, sizes, strict=True)):
                if was != now and dim not in grown:
                    grown.add(dim)
                    _log_dims(self.name, source_name, dim, was, now)
        self.sizes[source_name] = sizes
        if self.dynamic is False:
            return set()
        static = set(getattr(tensor, _STATIC, ()))
        if self.dynamic is True or not config.assume_static_by_default:
            dims = set(range(len(sizes)))
        else:
            dims = set(grown) | set(getattr(tensor, _DYNAMIC, ())) | set(getattr(tensor, _WEAK_DYNAMIC, ()))
        return {d for d in dims if d < len(sizes)} - static

    def dynamic_scalar(self, source_name: str, value: Any) -> bool:
        """Whether the int ``value`` read from ``source_name`` is symbolic in this compile."""
        if type(value) is not int:
            return False
        seen = self.scalars.get(source_name, value)
        self.scalars[source_name] = value
        if config.automatic_dynamic_shapes and seen != value and source_name not in self.dynamic_scalars:
            self.dynamic_scalars.add(source_name)
            if dynamic_log.isEnabledFor(20):
                dynamic_log.info(
                    "%s: %s changed from %s to %s, so it is dynamic from now on",
                    self.name,
                    user_name(source_name),
                    seen,
                    value,
                )
        if self.dynamic is False:
            return False
        if self.dynamic is True:
            return True
        return source_name in self.dynamic_scalars

    def __repr__(self) -> str:
        dims = {k: sorted(v) for k, v in self.dynamic_dims_of.items() if v}
        return f"FrameState({self.name!r}, dynamic dims={dims}, dynamic scalars={sorted(self.dynamic_scalars)})"


def _log_dims(name: str, source_name: str, dim: int, was: int, now: int) -> None:
    if dynamic_log.isEnabledFor(20):
        dynamic_log.info(
            "%s: %s.size(%d) changed from %d to %d, so that dimension is dynamic from now on",
            name,
            user_name(source_name),
            dim,
            was,
            now,
        )


_states: weakref.WeakKeyDictionary[CodeType, FrameState] = weakref.WeakKeyDictionary()
# A method's states, one per class of its ``self`` (held weakly, as the code objects are).
_states_by_class: weakref.WeakKeyDictionary[CodeType, weakref.WeakKeyDictionary[type, FrameState]] = (
    weakref.WeakKeyDictionary()
)


def frame_state_for(code: CodeType, owner: type | None = None) -> FrameState:
    """The one ``FrameState`` of ``code`` (until ``reset()``); with ``owner``, the class of the method's
    ``self``, one per class. ``ember.compile(module)`` compiles ``Module._wrapped_call_impl``, one code
    object for every kind of module: without the class, a GPT's input sizes would make the input of an
    MLP compiled later dynamic from its first compile. (PyTorch compiles each class's own ``forward``,
    whose code object is the class's.)"""
    where = f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"
    if owner is None:
        state = _states.get(code)
        if state is None:
            state = _states[code] = FrameState(where)
        return state
    per_class = _states_by_class.get(code)
    if per_class is None:
        per_class = _states_by_class[code] = weakref.WeakKeyDictionary()
    state = per_class.get(owner)
    if state is None:
        state = per_class[owner] = FrameState(f"{where} of {owner.__qualname__}")
    return state


def reset() -> None:
    _states.clear()
    _states_by_class.clear()


# -- marks on tensors --------------------------------------------------------------------------------


def _dims(t: Any, index: int | list[int] | tuple[int, ...]) -> list[int]:
    dims = [index] if isinstance(index, int) else list(index)
    ndim = t.dim()
    out = []
    for d in dims:
        if not isinstance(d, int) or not -ndim <= d < max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        out.append(d % ndim if ndim else 0)
    return out


def _add_mark(t: Any, attr: str, dims: list[int]) -> None:
    marks = set(getattr(t, attr, ()))
    marks.update(dims)
    setattr(t, attr, marks)


def mark_dynamic(t: Any, index: int | list[int] | tuple[int, ...], *, min: int | None = None, max: int | None = None):
    """Make dimension ``index`` of ``t`` symbolic from the first compile on (``torch._dynamo.mark_dynamic``)."""
    if min is not None and max is not None and min > max:
        raise ValueError(f"mark_dynamic: min={min} is larger than max={max}")
    dims = _dims(t, index)
    if set(dims) & set(getattr(t, _STATIC, ())):
        raise ValueError(f"mark_dynamic: dimension {dims} was marked static")
    _add_mark(t, _DYNAMIC, dims)
    if min is not None or max is not None:
        ranges = dict(getattr(t, _DYNAMIC_RANGES, {}))
        for d in dims:
            ranges[d] = (min, max)
        setattr(t, _DYNAMIC_RANGES, ranges)


def maybe_mark_dynamic(t: Any, index: int | list[int] | tuple[int, ...]) -> None:
    """As ``mark_dynamic``, but capture may still specialize the dimension without an error."""
    _add_mark(t, _WEAK_DYNAMIC, _dims(t, index))


def mark_static(t: Any, index: int | list[int] | tuple[int, ...] | None = None) -> None:
    """Keep dimension ``index`` (every dimension when None) of ``t`` static, even after size changes.

    On a module, marks the module itself static (its attributes are guarded as constants).
    """
    if not hasattr(t, "_shape"):
        if index is not None:
            raise TypeError(f"mark_static: a dimension was given for a {type(t).__name__}, which is not a tensor")
        t._dynamo_marked_static = True
        return
    dims = list(range(t.dim())) if index is None else _dims(t, index)
    for attr in (_DYNAMIC, _WEAK_DYNAMIC):
        if getattr(t, attr, None):
            setattr(t, attr, set(getattr(t, attr)) - set(dims))
    _add_mark(t, _STATIC, dims)
