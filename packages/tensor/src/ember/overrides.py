"""``ember.overrides``: PyTorch's ``torch.overrides``, the public side of ``__torch_function__``.

The protocol itself (when it is on, how calls are offered to modes and to overriding types) is in
``ember.core.function_protocol``; this module offers PyTorch's names for it: ``TorchFunctionMode``,
``handle_torch_function``, ``has_torch_function*``, ``get_overridable_functions`` and the rest.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ember.core import function_protocol as _FP
from ember.core.function_protocol import activate, is_active
from ember.core.tensor import Tensor

__all__ = [
    "TorchFunctionMode",
    "activate",
    "enable_reentrant_dispatch",
    "get_ignored_functions",
    "get_overridable_functions",
    "get_testing_overrides",
    "handle_torch_function",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "is_active",
    "is_tensor_like",
    "is_tensor_method_or_property",
    "resolve_name",
    "wrap_torch_function",
]


class TorchFunctionMode:
    """Base of ``__torch_function__`` modes: while one is entered, every call of an Ember function or
    Tensor method goes to its ``__torch_function__(func, types, args=(), kwargs=None)`` first; inside
    that handler the mode is off, so calling ``func`` runs it normally."""

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        raise NotImplementedError()

    def __enter__(self) -> TorchFunctionMode:
        activate()
        _FP.state.modes.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        modes = _FP.state.modes
        if not modes or modes[-1] is not self:
            raise RuntimeError("torch function modes must be exited in the reverse order they were entered")
        modes.pop()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchFunctionMode:
        return cls(*args, **kwargs)


def _get_current_function_mode() -> TorchFunctionMode | None:
    modes = _FP.state.modes
    return modes[-1] if modes else None


def _get_current_function_mode_stack() -> list:
    return list(_FP.state.modes)


def has_torch_function(relevant_args: Iterable) -> bool:
    """Whether a call with these arguments must go through ``handle_torch_function``."""
    s = _FP.state
    if s.all_off:
        return False
    if s.modes:
        return True
    return not s.subclasses_off and bool(_FP.overloaded_args(relevant_args))


def has_torch_function_unary(arg: Any) -> bool:
    return has_torch_function((arg,))


def has_torch_function_variadic(*args: Any) -> bool:
    return has_torch_function(args)


def handle_torch_function(public_api: Callable, relevant_args: Iterable, *args: Any, **kwargs: Any) -> Any:
    """Offer the call of ``public_api`` to the active mode and the overriding arguments' types;
    the first answer other than ``NotImplemented`` is the result, and with none a TypeError."""
    return _FP.handle(public_api, list(relevant_args), args, kwargs)


_get_overloaded_args = _FP.overloaded_args


def is_tensor_like(inp: Any) -> bool:
    """A Tensor, or an object whose type defines ``__torch_function__``."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def _function_modules() -> list[types.ModuleType]:
    import importlib

    out = []
    for name in _FP.FUNCTION_MODULES:
        module = sys.modules.get(name)
        if module is None and name == "ember.nn.functional":
            with contextlib.suppress(ImportError):
                module = importlib.import_module(name)
        if module is not None:
            out.append(module)
    return out


# Functions of the top level that take no tensor to dispatch on (factories, global settings),
# which PyTorch lists as ignored too.
_IGNORED_NAMES = frozenset(
    name
    for group in (
        ("arange", "empty", "empty_strided", "eye", "full", "linspace", "logspace", "ones", "rand", "randint", "randn"),
        ("randperm", "range", "scalar_tensor", "tensor", "zeros", "as_tensor", "from_numpy", "asarray", "frombuffer"),
        ("hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window", "tril_indices"),
        ("triu_indices", "is_tensor", "is_storage", "get_default_dtype", "set_default_device"),
        ("get_default_device", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"),
        ("set_printoptions", "promote_types", "can_cast", "result_type", "is_grad_enabled", "set_grad_enabled"),
        ("no_grad", "enable_grad", "inference_mode", "compile", "save", "load", "use_deterministic_algorithms"),
        ("are_deterministic_algorithms_enabled", "get_num_threads", "set_num_threads", "typename"),
    )
    for name in group
)


def get_ignored_functions() -> set[Callable]:
    """Public functions that cannot be overridden by ``__torch_function__`` (they take no tensor)."""
    ember = sys.modules.get("ember")
    if ember is None:
        return set()
    return {getattr(ember, n) for n in _IGNORED_NAMES if callable(getattr(ember, n, None))}


_OVERRIDABLE_TYPES = (types.FunctionType, types.BuiltinFunctionType, _FP.Overridable)


def get_overridable_functions() -> dict[Any, list[Callable]]:
    """The functions that ``__torch_function__`` sees, per namespace (module or ``Tensor``)."""
    ignored = get_ignored_functions()
    out: dict[Any, list[Callable]] = {}
    for module in _function_modules():
        if module.__name__ == "ember":
            from ember.core.api import functions

            names: Iterable[str] = functions
        else:
            names = [n for n in vars(module) if not n.startswith("_")]
        found = []
        for name in names:
            fn = module.__dict__.get(name)
            if isinstance(fn, _OVERRIDABLE_TYPES) and fn not in ignored:
                found.append(fn)
        out[module] = found
    out[Tensor] = [
        getattr(Tensor, name)
        for name, raw in vars(Tensor).items()
        if isinstance(raw, _OVERRIDABLE_TYPES)
        and name not in _FP._UNWRAPPED_METHODS
        and (not name.startswith("__") or _FP._is_operator(name))
    ]
    return out


def get_testing_overrides() -> dict[Callable, Callable]:
    """A dummy override (returning -1) for each overridable function, with its signature."""
    out = {}
    for functions in get_overridable_functions().values():
        for fn in functions:

            def dummy(*args: Any, **kwargs: Any) -> int:
                return -1

            out[fn] = functools.wraps(fn)(dummy)
    return out


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether ``func`` is a method or property of ``Tensor`` (called with the tensor first)."""
    if getattr(func, "__name__", None) == "__get__":
        return True
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func


def resolve_name(f: Callable) -> str | None:
    """``ember.add`` -> ``"ember.add"``, ``Tensor.add`` -> ``"ember.Tensor.add"``."""
    if is_tensor_method_or_property(f):
        return f"ember.Tensor.{f.__name__}"
    for module in _function_modules():
        name = getattr(f, "__name__", None)
        if name is not None and module.__dict__.get(name) is f:
            return f"{module.__name__}.{name}"
    return None


def wrap_torch_function(dispatcher: Callable) -> Callable[[Callable], Callable]:
    """Decorator: make a Python function overridable; ``dispatcher(*args, **kwargs)`` gives the
    arguments to look for ``__torch_function__`` on."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return fn(*args, **kwargs)

        return wrapped

    return decorate


@contextlib.contextmanager
def enable_reentrant_dispatch() -> Iterator[None]:
    """PyTorch needs this to call the dispatcher again from inside a ``__torch_dispatch__`` handler.
    Ember's dispatcher is always re-entrant (a handler runs with its mode popped), so the block runs
    as it is."""
    yield
