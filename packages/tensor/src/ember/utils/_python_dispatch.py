"""``ember.utils._python_dispatch``: PyTorch's ``__torch_dispatch__`` modes and wrapper-subclass
helpers over Ember's dispatcher.

A ``TorchDispatchMode`` is an Ember ``DispatchMode`` whose handler is PyTorch's
``__torch_dispatch__(self, func, types, args=(), kwargs=None)``; ``func`` is Ember's ``OpOverload``
(``ember.ops.aten.add.Tensor``), which answers PyTorch's ``func.overloadpacket``, ``func._schema``
and ``func.name()``. As in PyTorch, the mode sees ops below autograd and is off while its handler
runs, so ``func(*args, **kwargs)`` inside it computes the op.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ember.core import dispatch
from ember.core.dispatch import DispatchMode, OpOverload
from ember.core.tensor import Tensor

__all__ = [
    "TorchDispatchMode",
    "_disable_current_modes",
    "_get_current_dispatch_mode",
    "_get_current_dispatch_mode_stack",
    "_pop_mode_temporarily",
    "is_traceable_wrapper_subclass",
    "is_traceable_wrapper_subclass_type",
    "return_and_correct_aliasing",
    "transform_subclass",
]


class TorchDispatchMode(DispatchMode):
    """Base of PyTorch-style dispatch modes: override ``__torch_dispatch__`` and enter with ``with``."""

    def __init__(self, _dispatch_key=None) -> None:
        if _dispatch_key is not None:
            raise NotImplementedError("TorchDispatchMode(_dispatch_key=...) is not supported by Ember")

    def __torch_dispatch__(self, func: OpOverload, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        raise NotImplementedError()

    def __ember_dispatch__(self, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        return self.__torch_dispatch__(func, types, args, kwargs)

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchDispatchMode:
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False


def _get_current_dispatch_mode() -> DispatchMode | None:
    """The innermost active dispatch mode, or None."""
    modes = dispatch._state.modes
    return modes[-1] if modes else None


def _get_current_dispatch_mode_stack() -> list:
    return dispatch.active_modes()


_get_dispatch_mode_stack = _get_current_dispatch_mode_stack


@contextlib.contextmanager
def _pop_mode_temporarily() -> Iterator[DispatchMode | None]:
    """The innermost mode is off for the block (and given to it)."""
    mode = _get_current_dispatch_mode()
    if mode is None:
        yield None
        return
    mode.__exit__(None, None, None)
    try:
        yield mode
    finally:
        mode.__enter__()


@contextlib.contextmanager
def _disable_current_modes() -> Iterator[list]:
    """Every active dispatch mode is off for the block; gives them, outermost first."""
    modes = dispatch.active_modes()
    for mode in reversed(modes):
        mode.__exit__(None, None, None)
    try:
        yield modes
    finally:
        for mode in modes:
            mode.__enter__()


def is_traceable_wrapper_subclass(t: object) -> bool:
    """Whether ``t`` is a Tensor subclass instance with ``__tensor_flatten__``/``__tensor_unflatten__``."""
    return isinstance(t, Tensor) and is_traceable_wrapper_subclass_type(type(t))


def is_traceable_wrapper_subclass_type(t: type) -> bool:
    return (
        isinstance(t, type)
        and issubclass(t, Tensor)
        and t is not Tensor
        and hasattr(t, "__tensor_flatten__")
        and hasattr(t, "__tensor_unflatten__")
    )


def transform_subclass(t: Tensor, callback: Callable, outer_size=None, outer_stride=None) -> Tensor:
    """A new instance of ``t``'s class whose inner tensors are ``callback(name, inner)``."""
    outer_size = t.size() if outer_size is None else outer_size
    outer_stride = t.stride() if outer_stride is None else outer_stride
    names, ctx = t.__tensor_flatten__()
    transformed = {name: callback(name, getattr(t, name)) for name in names}
    out = type(t).__tensor_unflatten__(transformed, ctx, outer_size, outer_stride)
    if not isinstance(out, type(t)):
        raise AssertionError(f"__tensor_unflatten__ of {type(t).__name__} returned {type(out).__name__}")
    return out


def _alias_sets(arguments) -> dict[str, int]:
    return {a.alias.set: i for i, a in enumerate(arguments) if a.alias is not None}


def return_and_correct_aliasing(func: OpOverload, args: tuple, kwargs: dict, out: Any) -> Any:
    """Make a wrapper subclass's results alias its inputs as ``func``'s schema says.

    In-place and ``out=`` ops return the very objects they were given; view ops return wrappers
    that share the input wrapper's storage (so ``untyped_storage()`` and the version counter are the
    input's), as PyTorch's helper does.
    """
    schema = func.schema
    kwargs = kwargs or {}

    def argument(i: int):
        arg = schema.arguments[i]
        if i < len(args) and not arg.kwarg_only:
            return args[i]
        return kwargs.get(arg.name, arg.default if arg.has_default else None)

    sets = _alias_sets(schema.arguments)
    outs = out if isinstance(out, tuple | list) else (out,)
    fixed = []
    for ret, value in zip(schema.returns, outs, strict=False):
        alias = ret.alias
        if alias is None or alias.set not in sets:
            fixed.append(value)
            continue
        source = argument(sets[alias.set])
        if alias.is_write:
            fixed.append(source)  # in-place / out=: the argument object itself
        elif isinstance(value, Tensor) and isinstance(source, Tensor) and value is not source:
            value._storage = source._storage  # a view: share the input's storage
            fixed.append(value)
        else:
            fixed.append(value)
    if isinstance(out, tuple | list):
        return type(out)(fixed) + type(out)(outs[len(fixed) :])
    return fixed[0] if fixed else out
