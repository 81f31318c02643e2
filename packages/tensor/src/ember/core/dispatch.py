"""The dispatcher: one door for every op.

An op is an ``OpOverload`` (``ember.ops.aten.add.Tensor``) created once from its schema. It holds a
kernel per device type, a meta kernel (which is the kernel of the ``meta`` device), an optional
decomposition and tags. Calling it dispatches, in this order:

1. interposers (autocast), which later packages install with ``add_interposer``; each may handle
   the call or pass it down;
1b. the autograd handler (``set_autograd_handler``), when an argument requires grad;
2. the innermost active dispatch mode, else a tensor subclass that defines ``__ember_dispatch__``
   (fake tensors, tracing, functionalization and DTensor live here); inside its handler the mode is
   off, so the ops it calls go further down;
3. the kernel for the device type of the first tensor argument, else the decomposition.

The fast path, taken when no interposer or mode is active, no argument is a dispatching subclass and
none requires grad, is one flag test, a scan of the arguments for a tensor requiring grad, and a
dict lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ember.core.devices import check_backend, get_default_device, to_device
from ember.core.schema import FunctionSchema, parse_schema

TAGS = frozenset({"pointwise", "reduction", "view", "inplace", "out", "random", "core", "factory", "nondeterministic"})


class _DispatchState(threading.local):
    def __init__(self) -> None:
        self.modes: list = []


_state = _DispatchState()
# Read on every call: ``slow`` while any mode is pushed in any thread or any interposer is installed;
# ``subclasses`` once a Tensor subclass defining __ember_dispatch__ exists (set by ember.core.tensor).
_flags = type("Flags", (), {"slow": False, "subclasses": False})()
_interposers: list = []
# handler(op, args, kwargs, call_below), installed by the autograd package; called for any op an
# argument of which requires grad (``Tensor.requires_grad``, also true of tensors with a grad_fn).
_autograd: Callable | None = None
_mode_count = 0
_mode_lock = threading.Lock()


def _refresh_flags() -> None:
    _flags.slow = bool(_interposers) or _mode_count > 0


class OpOverload:
    __slots__ = (
        "_any",
        "_kernels",
        "autograd",
        "decomposition",
        "name",
        "namespace",
        "overload",
        "packet",
        "schema",
        "tags",
    )

    def __init__(self, namespace: str, schema: FunctionSchema, tags: frozenset) -> None:
        self.namespace = namespace
        self.schema = schema
        self.name = schema.name
        self.overload = schema.overload or "default"
        self.tags = tags
        self._kernels: dict[str, Callable] = {}
        self._any: Callable | None = None  # the "*" kernel, kept apart for the fast path
        self.decomposition: Callable | None = None
        # A custom op's derivative from ember.library.register_autograd: (backward, setup_context).
        self.autograd: tuple[Callable, Callable | None] | None = None
        self.packet: OpOverloadPacket | None = None

    # -- registration -------------------------------------------------------------------------

    def register_kernel(self, device_type: str) -> Callable[[Callable], Callable]:
        """A kernel for ``device_type``; ``"*"`` serves every device without its own (view ops)."""

        def register(fn: Callable) -> Callable:
            self._kernels[device_type] = fn
            if device_type == "*":
                self._any = fn
            return fn

        return register

    def register_meta(self, fn: Callable) -> Callable:
        self._kernels["meta"] = fn
        return fn

    def register_decomposition(self, fn: Callable) -> Callable:
        self.decomposition = fn
        return fn

    def kernel(self, device_type: str) -> Callable | None:
        return self._kernels.get(device_type)

    @property
    def meta(self) -> Callable | None:
        return self._kernels.get("meta") or self._kernels.get("*")

    def has_kernel(self, device_type: str) -> bool:
        return device_type in self._kernels

    # -- calling ------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _flags.slow:
            return _dispatch_slow(self, args, kwargs, 0)
        if _autograd is not None and _needs_grad(args, kwargs):
            return _autograd(self, args, kwargs, self._below_autograd)
        # The fast path: the first argument is a plain tensor with a kernel for its device.
        if args and not _flags.subclasses:
            first = args[0]
            if type(first) is Tensor:
                kernel = self._kernels.get(first.device.type) or self._any
                if kernel is not None:
                    return kernel(*args, **kwargs)
        tensor = _first_tensor(args, kwargs)
        # Once a dispatching subclass exists, any argument (not only the first) may be one.
        if _flags.subclasses and any(t._dispatches for t in _all_tensors(args, kwargs)):
            return _dispatch_slow(self, args, kwargs, 0)
        return self.redispatch_backend(tensor, args, kwargs)

    def _below_autograd(self, args: tuple, kwargs: dict) -> Any:
        """What runs under the autograd level when no interposer or mode is active (the fast path's rest)."""
        if _flags.slow:
            return _dispatch_slow(self, args, kwargs, len(_interposers) + 1)
        if args and not _flags.subclasses:
            first = args[0]
            if type(first) is Tensor:
                kernel = self._kernels.get(first.device.type) or self._any
                if kernel is not None:
                    return kernel(*args, **kwargs)
        tensor = _first_tensor(args, kwargs)
        if _flags.subclasses and any(t._dispatches for t in _all_tensors(args, kwargs)):
            return _dispatch_slow(self, args, kwargs, len(_interposers) + 1)
        return self.redispatch_backend(tensor, args, kwargs)

    def redispatch_backend(self, tensor, args: tuple, kwargs: dict) -> Any:
        device_type = tensor.device.type if tensor is not None else _factory_device_type(kwargs)
        kernel = self._kernels.get(device_type) or self._kernels.get("*")
        if kernel is not None:
            return kernel(*args, **kwargs)
        if self.decomposition is not None:
            return self.decomposition(*args, **kwargs)
        check_backend(to_device(device_type))
        raise NotImplementedError(
            f"Could not run '{self.namespace}::{self.schema.qualified}' with arguments from the "
            f"'{device_type}' backend: no kernel and no decomposition"
        )

    def decompose(self, *args: Any, **kwargs: Any) -> Any:
        if self.decomposition is None:
            raise RuntimeError(f"{self} has no decomposition")
        return self.decomposition(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.namespace}.{self.name}.{self.overload}"

    __str__ = __repr__


# The Tensor class, set by ember.core.tensor when it is defined (it imports this module).
Tensor: Any = None


def _first_tensor(args: tuple, kwargs: dict):
    for a in args:
        if isinstance(a, Tensor):
            return a
        if type(a) in (list, tuple):
            for b in a:
                if isinstance(b, Tensor):
                    return b
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, Tensor):
                return a
    return None


def _needs_grad(args: tuple, kwargs: dict) -> bool:
    for a in args:
        if isinstance(a, Tensor):
            if a.requires_grad:
                return True
        elif type(a) in (list, tuple):
            for b in a:
                if isinstance(b, Tensor) and b.requires_grad:
                    return True
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, Tensor) and a.requires_grad:
                return True
    return False


def _factory_device_type(kwargs: dict) -> str:
    d = kwargs.get("device")
    return (to_device(d) if d is not None else get_default_device()).type


def _all_tensors(args: tuple, kwargs: dict) -> list:
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            found.append(a)
        elif type(a) in (list, tuple):
            found.extend(b for b in a if isinstance(b, Tensor))
    return found


def _dispatch_slow(op: OpOverload, args: tuple, kwargs: dict, level: int) -> Any:
    # 1. interposers, outermost first; each gets a callable that continues below it.
    if level < len(_interposers):
        return _interposers[level](op, args, kwargs, lambda a, k: _dispatch_slow(op, a, k, level + 1))
    if level == len(_interposers) and _autograd is not None and _needs_grad(args, kwargs):
        return _autograd(op, args, kwargs, lambda a, k: _dispatch_slow(op, a, k, level + 1))
    # 2. modes, innermost first, each switched off while it runs.
    modes = _state.modes
    if modes:
        mode = modes.pop()
        try:
            tensors = _all_tensors(args, kwargs)
            result = mode.__ember_dispatch__(op, tuple({type(t) for t in tensors}), args, kwargs)
        finally:
            modes.append(mode)
        if result is not NotImplemented:
            return result
    tensors = _all_tensors(args, kwargs)
    # 2b. subclasses, most derived first.
    overloaded = []
    for t in tensors:
        cls = type(t)
        if t._dispatches and cls not in overloaded:
            overloaded.append(cls)
    if overloaded:
        overloaded.sort(key=lambda c: -len(c.__mro__))
        types = tuple(overloaded)
        for cls in overloaded:
            result = cls.__ember_dispatch__(op, types, args, kwargs)
            if result is not NotImplemented:
                return result
        raise TypeError(f"no __ember_dispatch__ handled {op} for types {[c.__name__ for c in types]}")
    # 3. the backend.
    return op.redispatch_backend(tensors[0] if tensors else None, args, kwargs)


def add_interposer(handler: Callable) -> None:
    """Install ``handler(op, args, kwargs, call_below)`` above modes and backends (autocast, autograd)."""
    _interposers.append(handler)
    _refresh_flags()


def remove_interposer(handler: Callable) -> None:
    _interposers.remove(handler)
    _refresh_flags()


def set_autograd_handler(handler: Callable | None) -> None:
    """Install the autograd level: ``handler(op, args, kwargs, call_below)`` for calls needing grad."""
    global _autograd
    _autograd = handler


class DispatchMode:
    """Base of dispatch modes: ``with MyMode():`` routes every op call to ``__ember_dispatch__``.

    Inside the handler the mode is off: calling ``func(*args, **kwargs)`` runs the op below it.
    """

    def __ember_dispatch__(self, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        raise NotImplementedError

    def __enter__(self):
        global _mode_count
        _state.modes.append(self)
        with _mode_lock:
            _mode_count += 1
            _refresh_flags()
        return self

    def __exit__(self, *exc) -> None:
        global _mode_count
        if not _state.modes or _state.modes[-1] is not self:
            raise RuntimeError("dispatch modes must be exited in the reverse order they were entered")
        _state.modes.pop()
        with _mode_lock:
            _mode_count -= 1
            _refresh_flags()


def active_modes() -> list:
    return list(_state.modes)


# -- the op namespaces: ember.ops.aten.add.Tensor -------------------------------------------------


class OpOverloadPacket:
    """All overloads of one op name; calling it picks the first overload whose schema the call fits."""

    def __init__(self, namespace: str, name: str) -> None:
        self._namespace = namespace
        self._name = name
        self._overloads: dict[str, OpOverload] = {}

    def overloads(self) -> list[str]:
        return list(self._overloads)

    def __getattr__(self, overload: str) -> OpOverload:
        try:
            return self.__dict__["_overloads"][overload]
        except KeyError:
            raise AttributeError(f"'{self._namespace}.{self._name}' has no overload '{overload}'") from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for op in self._overloads.values():
            if _fits(op.schema, args, kwargs):
                return op(*args, **kwargs)
        raise TypeError(f"{self._namespace}.{self._name}: no overload accepts the arguments {_describe(args, kwargs)}")

    def __repr__(self) -> str:
        return f"<OpOverloadPacket {self._namespace}.{self._name}>"


def _describe(args: tuple, kwargs: dict) -> str:
    parts = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _fits(schema: FunctionSchema, args: tuple, kwargs: dict) -> bool:
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        return False
    by_name = {a.name: a for a in schema.arguments}
    if any(k not in by_name for k in kwargs):
        return False
    given = {a.name: v for a, v in zip(positional, args, strict=False)} | kwargs
    for arg in schema.arguments:
        if arg.name not in given:
            if not arg.has_default and not arg.type.optional:
                return False
            continue
        value, t = given[arg.name], arg.type
        if value is None:
            if not t.optional:
                return False
        elif t.is_list:
            if not isinstance(value, list | tuple) and not (t.base in ("int", "SymInt") and isinstance(value, int)):
                return False
        elif (
            (t.base == "Tensor" and not isinstance(value, Tensor))
            or (t.base == "Scalar" and isinstance(value, Tensor) and value.ndim != 0)
            or (t.base in ("int", "SymInt") and not isinstance(value, int))
        ):
            return False
    return True


class OpNamespace:
    def __init__(self, name: str) -> None:
        self._name = name
        self._packets: dict[str, OpOverloadPacket] = {}

    def __getattr__(self, name: str) -> OpOverloadPacket:
        try:
            return self.__dict__["_packets"][name]
        except KeyError:
            raise AttributeError(f"'ember.ops.{self._name}' has no op '{name}'") from None

    def __iter__(self):
        return iter(list(self._packets.values()))

    def __dir__(self):
        return list(self._packets)


class _Ops:
    def __init__(self) -> None:
        self._namespaces: dict[str, OpNamespace] = {}

    def namespace(self, name: str) -> OpNamespace:
        if name not in self._namespaces:
            self._namespaces[name] = OpNamespace(name)
        return self._namespaces[name]

    def __getattr__(self, name: str) -> OpNamespace:
        try:
            return self.__dict__["_namespaces"][name]
        except KeyError:
            raise AttributeError(f"ember.ops has no namespace '{name}'") from None


ops = _Ops()
_registry: dict[str, OpOverload] = {}


def define(schema: str, tags: tuple[str, ...] = (), namespace: str = "aten") -> OpOverload:
    """Register an op by its schema; returns the ``OpOverload`` to attach kernels to."""
    parsed = parse_schema(schema)
    unknown = set(tags) - TAGS
    if unknown:
        raise ValueError(f"define({schema!r}): unknown tags {sorted(unknown)}")
    key = f"{namespace}::{parsed.qualified}"
    if key in _registry:
        raise RuntimeError(f"op {key} is already defined")
    op = OpOverload(namespace, parsed, frozenset(tags))
    space = ops.namespace(namespace)
    packet = space._packets.get(parsed.name)
    if packet is None:
        packet = space._packets[parsed.name] = OpOverloadPacket(namespace, parsed.name)
    packet._overloads[op.overload] = op
    op.packet = packet
    _registry[key] = op
    return op


def undefine(op: OpOverload) -> None:
    """Remove an op defined by ``define`` (``ember.library.Library`` undoing its registrations)."""
    key = f"{op.namespace}::{op.schema.qualified}"
    if _registry.get(key) is not op:
        raise RuntimeError(f"op {key} is not defined")
    del _registry[key]
    packet = op.packet
    del packet._overloads[op.overload]
    if not packet._overloads:
        del ops.namespace(op.namespace)._packets[op.name]


def all_ops() -> list[OpOverload]:
    return list(_registry.values())


def lookup(qualified: str) -> OpOverload:
    """``lookup("aten::add.Tensor")``."""
    return _registry[qualified]
