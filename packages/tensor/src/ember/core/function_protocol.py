"""PyTorch's ``__torch_function__`` protocol over Ember's Python API.

PyTorch checks, on every call of every torch function and Tensor method, whether an argument
overrides ``__torch_function__`` or a ``TorchFunctionMode`` is active. Ember keeps its eager path
free of that check until someone needs it: the protocol is *switched on* the first time a Tensor
subclass that defines ``__torch_function__`` (other than ``_disabled_torch_function_impl``) is
defined, a ``TorchFunctionMode`` is entered, or ``activate()`` is called. Switching on
replaces the public functions of Ember's function namespaces (``ember``, ``ember.nn.functional``,
``ember.linalg``, ``ember.fft``, ``ember.special``), the functions ``ember.nn``'s classes hold as
static methods, and ``Tensor``'s methods and operators, by wrappers that make the check; it stays on
for the rest of the process.

While off, a call costs nothing extra. While on, a call with only plain tensors and Python values
pays one scan of its arguments with a cached per-type lookup. The handler receives the wrapper as
``func`` (so ``func is ember.add`` and ``func is Tensor.add`` hold, as in PyTorch).

Two differences from PyTorch follow from that. A Tensor subclass that defines no
``__torch_function__`` anywhere in its bases (``class Mine(Tensor): pass``) does not take part: its
ops give plain tensors, as Ember's own subclasses (fake, functional, batched tensors) rely on; PyTorch
would convert them to ``Mine`` through the inherited default, which a subclass gets here by defining
``__torch_function__`` (calling ``super().__torch_function__``). And objects that are not Tensors
but define ``__torch_function__`` (PyTorch's "tensor-likes") are honoured once the protocol is on; a
program that uses only such objects switches it on with ``ember.overrides.activate()``.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import types
from collections.abc import Callable, Iterable
from typing import Any

from ember.core.tensor import Tensor

# The namespaces whose public functions take part, by module name.
FUNCTION_MODULES = ("ember", "ember.nn.functional", "ember.linalg", "ember.fft", "ember.special")


class _State(threading.local):
    def __init__(self) -> None:
        self.modes: list = []  # TorchFunctionMode stack, innermost last
        self.subclasses_off = 0  # DisableTorchFunctionSubclass depth
        self.all_off = 0  # DisableTorchFunction depth


state = _State()
_active = False
_lock = threading.RLock()
# id of an original function -> its wrapper.
_wrappers: dict[int, Overridable] = {}
# Per type: does it take part in __torch_function__ (see _type_overrides)?
_overrides_cache: dict[type, bool] = {}


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The ``__torch_function__`` of classes that opt out: the call runs as if there were none."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


def _type_overrides(cls: type) -> bool:
    found = _overrides_cache.get(cls)
    if found is None:
        impl = None
        # The first definition in the MRO, short of Tensor's own default: a Tensor subclass that
        # defines nothing keeps Ember's behaviour (see the module docstring).
        for klass in cls.__mro__:
            if klass is Tensor:
                break
            if "__torch_function__" in vars(klass):
                impl = vars(klass)["__torch_function__"]
                break
        impl = getattr(impl, "__func__", impl)
        found = impl is not None and impl is not _disabled_torch_function_impl
        _overrides_cache[cls] = found
    return found


def is_enabled_subclass(cls: type) -> bool:
    """Whether instances of ``cls`` (a Tensor subclass) take part in ``__torch_function__``."""
    _overrides_cache.pop(cls, None)
    return _type_overrides(cls)


def overloaded_args(relevant: Iterable) -> list:
    """The arguments whose types override ``__torch_function__``, one per type, subclasses before
    their bases and otherwise left to right (PyTorch's order)."""
    found: list = []
    seen: list[type] = []
    for arg in relevant:
        cls = type(arg)
        if cls in seen or not _type_overrides(cls):
            continue
        seen.append(cls)
        position = len(found)
        for i, other in enumerate(found):
            if issubclass(cls, type(other)):
                position = i
                break
        found.insert(position, arg)
    return found


def relevant_args(args: tuple, kwargs: dict) -> list:
    """The arguments ``__torch_function__`` is looked up on: every argument, and the items of lists
    and tuples among them."""
    out = []
    for a in (*args, *kwargs.values()) if kwargs else args:
        if type(a) in (list, tuple):
            out.extend(a)
        else:
            out.append(a)
    return out


def _has_override(args: tuple, kwargs: dict) -> bool:
    cache = _overrides_cache
    for a in (*args, *kwargs.values()) if kwargs else args:
        cls = type(a)
        if cls is Tensor:
            continue
        if cls in (list, tuple):
            for b in a:
                flag = cache.get(type(b))
                if flag or (flag is None and _type_overrides(type(b))):
                    return True
            continue
        flag = cache.get(cls)
        if flag or (flag is None and _type_overrides(cls)):
            return True
    return False


def handle(func: Callable, relevant: Iterable, args: tuple, kwargs: dict) -> Any:
    """Offer the call to the innermost mode, then to each overriding argument's type, in order."""
    s = state
    tried = []
    if s.modes and not s.all_off:
        mode = s.modes.pop()
        try:
            types_ = tuple(type(a) for a in overloaded_args(relevant))
            result = mode.__torch_function__(func, types_, args, kwargs)
        finally:
            s.modes.append(mode)
        if result is not NotImplemented:
            return result
        tried.append(f"  - mode object {mode!r}")
    overloaded = overloaded_args(relevant) if not s.all_off and not s.subclasses_off else []
    types_ = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        result = arg.__torch_function__(func, types_, args, kwargs)
        if result is not NotImplemented:
            return result
        tried.append(f"  - tensor subclass {type(arg)}")
    raise TypeError(
        f"Multiple dispatch failed for '{public_name(func)}'; all __torch_function__ handlers returned "
        "NotImplemented:\n\n" + "\n".join(tried) + "\n"
    )


def public_name(func: Callable) -> str:
    """``ember.sum``, ``ember.Tensor.add``, ``ember.nn.functional.linear``: how errors name a function."""
    namespace = getattr(func, "namespace", None)
    name = getattr(func, "__name__", None) or str(func)
    if namespace is not None:
        return f"{namespace}.{name}"
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module else name


def wants_handling(args: tuple, kwargs: dict) -> bool:
    s = state
    if s.all_off:
        return False
    if s.modes:
        return True
    return not s.subclasses_off and _has_override(args, kwargs)


class Overridable:
    """An Ember function or Tensor method behind the ``__torch_function__`` check.

    It compares and hashes as the function it wraps, so that tables keyed by ``ember.mean`` before
    the protocol was switched on (``HANDLED_FUNCTIONS[torch.mean] = ...``) still find it; bound to
    an instance it acts as a method.
    """

    __slots__ = ("__dict__", "__wrapped__", "namespace", "public")

    def __init__(self, fn: Callable, name: str | None, public: Callable | None, namespace: str | None) -> None:
        self.__wrapped__ = fn
        self.public = public
        self.namespace = namespace
        functools.update_wrapper(self, fn)
        if name is not None:
            self.__name__ = name
            qualname = getattr(fn, "__qualname__", name)
            self.__qualname__ = f"Tensor.{name}" if "." in qualname or public is not None else name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if wants_handling(args, kwargs):
            return handle(self.public or self, relevant_args(args, kwargs), args, kwargs)
        return self.__wrapped__(*args, **kwargs)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Overridable):
            return other.__wrapped__ is self.__wrapped__
        return other is self.__wrapped__

    def __hash__(self) -> int:
        return hash(self.__wrapped__)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)


def wrap(
    fn: Callable, name: str | None = None, public: Callable | None = None, namespace: str | None = None
) -> Overridable:
    """``fn`` behind the ``__torch_function__`` check; one wrapper per function, named ``name`` (its
    public name). Handlers receive ``public`` when given (``Tensor.add`` for ``Tensor.__add__``,
    as PyTorch passes it), else the wrapper itself."""
    found = _wrappers.get(id(fn))
    if found is None:
        found = _wrappers[id(fn)] = Overridable(fn, name, public, namespace)
    return found


def is_active() -> bool:
    return _active


# What switching on replaced, (namespace or class, name, original), so that it can be undone.
_replaced: list[tuple[Any, str, Any]] = []


def _replace(namespace: dict, name: str, new: Any) -> None:
    _replaced.append((namespace, name, namespace[name]))
    namespace[name] = new


def _replace_attr(owner: type, name: str, new: Any) -> None:
    _replaced.append((owner, name, owner.__dict__[name]))
    setattr(owner, name, new)


def _deactivate() -> None:
    """Switch the protocol off again, putting every original back (for tests that must leave the
    process as they found it). Modes still entered and subclasses already defined are not undone."""
    global _active
    with _lock:
        for holder, name, original in reversed(_replaced):
            if isinstance(holder, dict):
                holder[name] = original
            else:
                setattr(holder, name, original)
        _replaced.clear()
        _overrides_cache.clear()
        _active = False


def activate() -> None:
    """Switch the protocol on (idempotent): wrap every function namespace and Tensor's methods."""
    global _active
    with _lock:
        if _active:
            return
        _active = True
        _wrap_tensor_methods()
        for name in FUNCTION_MODULES:
            module = sys.modules.get(name)
            if module is None and name == "ember.nn.functional":
                try:
                    module = importlib.import_module(name)
                except ImportError:  # the ember-nn package is not installed
                    continue
            if module is not None:
                _wrap_module(module)
        _wrap_nn_static_functions()


def _public_functions(module: types.ModuleType) -> list[tuple[str, Callable]]:
    if module.__name__ == "ember":
        from ember.core.api import functions

        names: Iterable[str] = functions
    else:
        names = [n for n in module.__dict__ if not n.startswith("_")]
    out = []
    for name in names:
        value = module.__dict__.get(name)
        if isinstance(value, types.FunctionType | types.BuiltinFunctionType):
            out.append((name, value))
    return out


def _wrap_module(module: types.ModuleType) -> None:
    for name, fn in _public_functions(module):
        _replace(module.__dict__, name, wrap(fn, name, namespace=module.__name__))


# Methods that must not go through the protocol: reading metadata and the protocol's own hooks.
_UNWRAPPED_METHODS = frozenset(
    {"__torch_function__", "__torch_dispatch__", "__ember_dispatch__", "__init_subclass__", "__new__", "__init__"}
    | {"__repr__", "__format__", "__hash__", "__reduce_ex__", "__getattribute__", "__setattr__", "__delattr__"}
    | {"__dir__", "__sizeof__", "__subclasshook__", "__class_getitem__", "__array__", "__dlpack__"}
    | {"__dlpack_device__", "size", "stride", "dim", "ndimension", "numel", "nelement", "element_size"}
    | {"is_contiguous", "storage_offset", "data_ptr", "untyped_storage", "_bump_version", "as_subclass"}
    | {"_make_subclass", "_make_wrapper_subclass", "is_floating_point", "is_complex", "__deepcopy__"}
)


def _wrap_tensor_methods() -> None:
    operators = []
    for name, raw in list(vars(Tensor).items()):
        if name in _UNWRAPPED_METHODS or not isinstance(raw, types.FunctionType):
            continue
        if name.startswith("__"):
            if _is_operator(name):
                operators.append((name, raw))
            continue
        _replace_attr(Tensor, name, wrap(raw, name, namespace="ember.Tensor"))
    # Operators reach handlers as the method PyTorch names for them (``a + b`` as ``Tensor.add``).
    for name, raw in operators:
        public = vars(Tensor).get(OPERATOR_METHODS.get(name, ""))
        public = public if isinstance(public, Overridable) else None
        _replace_attr(Tensor, name, wrap(raw, name, public, namespace="ember.Tensor"))


# The method PyTorch's handlers receive for an operator.
OPERATOR_METHODS = {
    "__add__": "add",
    "__iadd__": "add_",
    "__sub__": "sub",
    "__isub__": "sub_",
    "__mul__": "mul",
    "__imul__": "mul_",
    "__truediv__": "div",
    "__itruediv__": "div_",
    "__mod__": "remainder",
    "__imod__": "remainder_",
    "__pow__": "pow",
    "__ipow__": "pow_",
    "__matmul__": "matmul",
    "__eq__": "eq",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
    "__neg__": "neg",
    "__abs__": "abs",
    "__invert__": "bitwise_not",
}


_OPERATOR_NAMES = (
    ("add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv", "rtruediv", "itruediv"),
    ("floordiv", "rfloordiv", "ifloordiv", "mod", "rmod", "imod", "pow", "rpow", "ipow", "matmul", "rmatmul"),
    ("imatmul", "and", "rand", "iand", "or", "ror", "ior", "xor", "rxor", "ixor", "lshift", "rlshift", "ilshift"),
    ("rshift", "rrshift", "irshift", "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "invert"),
    ("getitem", "setitem", "len", "iter", "bool", "float", "int", "complex", "index", "contains", "reversed"),
)
_OPERATORS = frozenset(f"__{name}__" for group in _OPERATOR_NAMES for name in group)


def _is_operator(name: str) -> bool:
    return name in _OPERATORS


def _wrap_nn_static_functions() -> None:
    # ember.nn's classes keep some functions as static methods bound when the class was made
    # (Conv2d keeps F.conv2d); those are wrapped in place so that module calls are seen too.
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("ember.nn."):
            continue
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != name:
                continue
            for attr, raw in list(vars(cls).items()):
                if isinstance(raw, staticmethod) and id(raw.__func__) in _wrappers:
                    _replace_attr(cls, attr, staticmethod(_wrappers[id(raw.__func__)]))


# -- switching the protocol off for a while ---------------------------------------------------------


class DisableTorchFunctionSubclass:
    """While active, Tensor subclasses' ``__torch_function__`` is not consulted (modes still are)."""

    def __enter__(self) -> DisableTorchFunctionSubclass:
        state.subclasses_off += 1
        return self

    def __exit__(self, *exc: object) -> None:
        state.subclasses_off -= 1


class DisableTorchFunction:
    """While active, neither subclasses' ``__torch_function__`` nor ``TorchFunctionMode``s are consulted."""

    def __enter__(self) -> DisableTorchFunction:
        state.all_off += 1
        return self

    def __exit__(self, *exc: object) -> None:
        state.all_off -= 1


def is_torch_function_enabled() -> bool:
    return not state.all_off and not state.subclasses_off


def is_torch_function_mode_enabled() -> bool:
    return not state.all_off


# -- what Tensor.__torch_function__ does by default -----------------------------------------------


def convert(ret: Any, cls: type) -> Any:
    """Results of a default ``__torch_function__`` as instances of ``cls`` (PyTorch's ``_convert``)."""
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, tuple | list) and not hasattr(ret, "_fields"):
        return type(ret)(convert(r, cls) for r in ret)
    if isinstance(ret, tuple) and hasattr(ret, "_fields"):  # a named tuple (return_types.max, ...)
        return type(ret)(*(convert(r, cls) for r in ret))
    return ret


def default_torch_function(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: run ``func`` with subclass handling off and give the results
    the most derived subclass among the arguments."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
    return convert(ret, cls)
