"""The dispatcher: one door for every op.

An op is an ``OpOverload`` (``ember.ops.aten.add.Tensor``) created once from its schema. It holds a
kernel per device type, a meta kernel (which is the kernel of the ``meta`` device), an optional
decomposition and tags. Calling it passes the call down one ordered list of named levels,
``LEVELS``, outermost first:

- ``autocast``, ``inference``, ``forward_ad``: levels a package installs (``install_level``) and
  switches on only while they have work (``enable_level``): autocast casts inputs, inference mode
  marks what it makes, forward AD carries tangents;
- ``autograd``: taken by a call an argument of which requires grad; it runs the op below itself
  and records the node. Without the autograd package installed such a call is an error, never a
  call that silently forgets the gradient;
- ``functionalize``: the level functionalization installs and enables;
- ``python``: the innermost active dispatch mode, else a tensor subclass that defines
  ``__ember_dispatch__`` (fake tensors, tracing, vmap, DTensor); inside its handler the mode is
  off, so the ops it calls go further down. A composite op that autograd differentiates through its
  parts (``kind == "composite_implicit"``) reaches a mode as those parts, as it does under grad, so
  a mode sees the same ops whatever the grad mode;
- ``backend``: the kernel for the device type of the first tensor argument (for a factory, the
  ``device=`` argument or the default device), else the decomposition.

Each level's handler is ``handler(op, args, kwargs, below)``; ``below(args, kwargs)`` continues at
the next level. The fast path, taken when no switchable level is on, no mode is active, no
argument is a dispatching subclass and none requires grad, is one flag test, a scan of the
arguments for a tensor requiring grad, and a dict lookup; it is written once, in
``OpOverload._below_autograd``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from ember.core.devices import check_backend, get_default_device, to_device
from ember.core.fastpath import MISS, native
from ember.core.schema import FunctionSchema, parse_schema
from ember.core.symbolic import INT_LIKE

# ``data_dependent_output``: the output's shape depends on the input's values (nonzero, unique,
# masked_select), so no meta function can give it without the data.
TAGS = frozenset(
    {"pointwise", "reduction", "view", "inplace", "out", "random", "core", "factory", "nondeterministic"}
    | {"data_dependent_output"}
)

LEVELS = ("autocast", "inference", "forward_ad", "autograd", "functionalize", "python", "backend")
# The levels a package switches on and off; the autograd level is taken per call, and the python
# and backend levels are the dispatcher's own.
SWITCHED = ("autocast", "inference", "forward_ad", "functionalize")
_AUTOGRAD = LEVELS.index("autograd")
_PYTHON = LEVELS.index("python")


class _DispatchState(threading.local):
    def __init__(self) -> None:
        self.modes: list = []


_state = _DispatchState()
# Read on every call: ``slow`` while any mode is pushed in any thread or any switched level is on;
# ``subclasses`` once a Tensor subclass defining __ember_dispatch__ exists (set by ember.core.tensor).
_flags = type("Flags", (), {"slow": False, "subclasses": False})()
_handlers: dict[str, Callable | None] = dict.fromkeys(LEVELS[:_PYTHON])
_enabled: dict[str, bool] = dict.fromkeys(SWITCHED, False)
# The enabled switched levels above autograd, as (position in LEVELS, handler), outermost first.
_outer: tuple = ()
_mode_count = 0
_mode_lock = threading.Lock()


def _missing_autograd(op, args, kwargs, below):
    raise RuntimeError(
        f"an argument of {op} requires grad, but the autograd level of the dispatcher is not installed: "
        "import ember.autograd (the ember-autograd package) to differentiate"
    )


# The autograd level's handler, read on every call: the installed one, else the error above.
_autograd: Callable = _missing_autograd


def _refresh_flags() -> None:
    global _outer
    _outer = tuple(
        (i, _handlers[name]) for i, name in enumerate(LEVELS[:_AUTOGRAD]) if _enabled[name] and _handlers[name]
    )
    _flags.slow = bool(_outer) or _enabled["functionalize"] or _mode_count > 0


def _check_level(name: str, switched: bool = False) -> None:
    if name not in _handlers:
        raise ValueError(f"unknown dispatch level {name!r}; the installable levels are {list(_handlers)}")
    if switched and name not in SWITCHED:
        raise ValueError(f"the dispatch level {name!r} is not switched on and off; those are {list(SWITCHED)}")


def install_level(name: str, handler: Callable | None) -> Callable | None:
    """Install ``handler(op, args, kwargs, below)`` as the level ``name``; returns the one it replaces.

    ``None`` uninstalls it. A switched level runs only while ``enable_level(name)`` holds.
    """
    global _autograd
    _check_level(name)
    previous = _handlers[name]
    _handlers[name] = handler
    if name == "autograd":
        _autograd = handler if handler is not None else _missing_autograd
    _refresh_flags()
    return previous


def level_handler(name: str) -> Callable | None:
    _check_level(name)
    return _handlers[name]


def enable_level(name: str, on: bool = True) -> None:
    """Switch a switched level on (or off): while on, every call passes through its handler."""
    _check_level(name, switched=True)
    if on and _handlers[name] is None:
        raise RuntimeError(f"the dispatch level {name!r} has no handler installed")
    _enabled[name] = on
    _refresh_flags()


def is_level_enabled(name: str) -> bool:
    _check_level(name, switched=True)
    return _enabled[name]


def has_autograd() -> bool:
    """Whether the autograd level is installed (``requires_grad=True`` needs it)."""
    return _handlers["autograd"] is not None


KINDS = ("primitive", "composite_implicit", "composite_explicit")


class OpName(str):
    """``op.name``: the op's base name (``"add"``), a ``str`` as Ember's code reads it, and callable as
    PyTorch's ``func.name()``, which gives the qualified name (``"aten::add.Tensor"``).

    Being callable, it must not be kept where a callable means something else (an fx node's name or
    target): keep ``str(op.name)`` there, a plain string.
    """

    qualified: str

    def __call__(self) -> str:
        return self.qualified


class OpOverload:
    """One overload of an op: its schema, tags, kernels per device type and decomposition.

    Its functional, in-place and ``out=`` forms are linked as objects (``op.functional``,
    ``op.inplace``, ``op.out``), grouped when they are defined by their shared signature. ``kind``
    says how the op is computed and differentiated:

    - ``primitive``: kernels only;
    - ``composite_implicit``: a decomposition and no derivative of its own, so autograd (and every
      mode) sees its parts; it may also have kernels, which eager calls without grad take for speed;
    - ``composite_explicit``: a decomposition and its own derivative (or none needed): it reaches
      autograd and modes as one op, and the decomposition serves backends without a kernel.
    """

    __slots__ = (
        "_any",
        "_forms",
        "_kernels",
        "autograd",
        "decomposition",
        "defined_at",
        "derivative_kind",
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
        self.name = OpName(schema.name)
        self.name.qualified = f"{namespace}::{schema.qualified}"
        self.overload = schema.overload or "default"
        self.tags = tags
        self._kernels: dict[str, Callable] = {}
        self._any: Callable | None = None  # the "*" kernel, kept apart for the fast path
        self.decomposition: Callable | None = None
        # A custom op's derivative from ember.library.register_autograd: (backward, setup_context).
        self.autograd: tuple[Callable, Callable | None] | None = None
        # Set by the autograd package: "formula", "nondifferentiable" or "custom" (register_autograd).
        self.derivative_kind: str | None = None
        self.packet: OpOverloadPacket | None = None
        self._forms: dict[str, OpOverload] = {}
        # Where the op was defined, (file, line): the family module, past the helpers that define ops.
        self.defined_at: tuple[str, int] | None = None

    # -- what the op is ---------------------------------------------------------------------------

    @property
    def form(self) -> str:
        """``functional``, ``inplace`` or ``out``."""
        if self.schema.is_out:
            return "out"
        return "inplace" if self.schema.is_inplace else "functional"

    @property
    def functional(self) -> OpOverload | None:
        return self._forms.get("functional")

    @property
    def inplace(self) -> OpOverload | None:
        return self._forms.get("inplace")

    @property
    def out(self) -> OpOverload | None:
        return self._forms.get("out")

    @property
    def kind(self) -> str:
        if self.decomposition is None:
            return "primitive"
        own = self.derivative_kind is not None or self.autograd is not None
        if not own and self.form == "inplace" and self.functional is not None:
            own = self.functional.derivative_kind is not None
        return "composite_explicit" if own else "composite_implicit"

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
        if _native_call is not None:
            # The fast path below, in C: the kernel's result, else MISS (nothing done yet).
            result = _native_call(self, args, kwargs)
            if result is not MISS:
                return result
        if _flags.slow:
            return _dispatch_slow(self, args, kwargs, 0)
        if _needs_grad(args, kwargs):
            return _autograd(self, args, kwargs, self._below_autograd)
        return self._below_autograd(args, kwargs)

    def _below_autograd(self, args: tuple, kwargs: dict) -> Any:
        """The levels under autograd; with none of them active, the fast path to the kernel."""
        if _flags.slow:
            return _dispatch_slow(self, args, kwargs, _AUTOGRAD + 1)
        # The fast path: the first argument is a plain tensor with a kernel for its device.
        if args and not _flags.subclasses:
            first = args[0]
            if type(first) is Tensor:
                kernel = self._kernels.get(first.device.type) or self._any
                if kernel is not None:
                    return kernel(*args, **kwargs)
        # Once a dispatching subclass exists, any argument (not only the first) may be one.
        if _flags.subclasses and any(t._dispatches for t in _all_tensors(args, kwargs)):
            return _dispatch_slow(self, args, kwargs, _PYTHON)
        return self.redispatch_backend(_first_tensor(args, kwargs), args, kwargs)

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

    def call_below(self, level: str, *args: Any, **kwargs: Any) -> Any:
        """Run the op from the level under ``level`` down.

        A mode's handler that computes the op itself (a tracer) calls ``op.call_below("python", ...)``
        so that the levels above the modes, which already handled this call, do not see it again
        (autograd would record it twice); ``op(...)`` inside a handler starts from the top.
        """
        return _dispatch_slow(self, args, kwargs, LEVELS.index(level) + 1)

    def decompose(self, *args: Any, **kwargs: Any) -> Any:
        if self.decomposition is None:
            raise RuntimeError(f"{self} has no decomposition")
        return self.decomposition(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.namespace}.{self.name}.{self.overload}"

    __str__ = __repr__

    # -- PyTorch's OpOverload attributes, for code written against __torch_dispatch__ -------------

    @property
    def overloadpacket(self) -> OpOverloadPacket | None:
        return self.packet

    @property
    def _schema(self) -> FunctionSchema:
        return self.schema

    @property
    def _overloadname(self) -> str:
        return self.overload

    @property
    def __name__(self) -> str:
        return f"{self.name}.{self.overload}"

    @property
    def is_view(self) -> bool:
        return "view" in self.tags


# The Tensor class, set by ember.core.tensor when it is defined (it imports this module).
Tensor: Any = None
# The compiled fast path of ``OpOverload.__call__``: it reads ``_flags.slow`` and ``_flags.subclasses``,
# so any new reason to leave the fast path must set one of them.
_native_call = native.call if native is not None else None


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


def _continue_at(op: OpOverload, level: int) -> Callable:
    return lambda args, kwargs: _dispatch_slow(op, args, kwargs, level)


def _dispatch_slow(op: OpOverload, args: tuple, kwargs: dict, level: int) -> Any:
    """The call from position ``level`` of ``LEVELS`` down."""
    # The switched levels above autograd, outermost first; each gets a callable that continues below it.
    for position, handler in _outer:
        if position >= level:
            return handler(op, args, kwargs, _continue_at(op, position + 1))
    if level <= _AUTOGRAD and _needs_grad(args, kwargs):
        return _autograd(op, args, kwargs, _continue_at(op, _AUTOGRAD + 1))
    if level < _PYTHON and _enabled["functionalize"]:
        return _handlers["functionalize"](op, args, kwargs, _continue_at(op, _PYTHON))
    modes = _state.modes
    tensors = _all_tensors(args, kwargs)
    if modes and op.decomposition is not None and op.kind == "composite_implicit":
        # Autograd differentiates this op through its parts, so a mode sees the parts, grad or not.
        return op.decomposition(*args, **kwargs)
    # Modes, innermost first, each switched off while it runs.
    if modes:
        mode = modes.pop()
        try:
            result = mode.__ember_dispatch__(op, tuple({type(t) for t in tensors}), args, kwargs)
        finally:
            modes.append(mode)
        if result is not NotImplemented:
            return result
    # Subclasses, most derived first.
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
    return op.redispatch_backend(tensors[0] if tensors else None, args, kwargs)


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

    @property
    def _qualified_op_name(self) -> str:
        return f"{self._namespace}::{self._name}"

    @property
    def __name__(self) -> str:
        return self._name

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
            if not isinstance(value, list | tuple) and not (
                t.base in ("int", "SymInt") and isinstance(value, INT_LIKE)
            ):
                return False
        elif (
            (t.base == "Tensor" and not isinstance(value, Tensor))
            or (t.base == "Scalar" and isinstance(value, Tensor) and value.ndim != 0)
            or (t.base in ("int", "SymInt") and not isinstance(value, INT_LIKE))
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
# The functional, in-place and out= forms of one op, by their shared signature (see _signature).
_form_groups: dict[tuple, dict[str, OpOverload]] = {}


_FACTORY_OPTIONS = frozenset({"dtype", "layout", "device", "pin_memory"})


def _signature(namespace: str, schema: FunctionSchema) -> tuple:
    """What the three forms of an op share: the name without its trailing ``_`` and the arguments
    other than the ``out=`` ones, without alias annotations, the first one's name (``input`` or
    ``self``) or a factory's keyword options (its ``out=`` form has none)."""
    arguments = tuple(
        ("" if i == 0 else a.name, str(a.type))
        for i, a in enumerate(schema.arguments)
        if not (a.kwarg_only and (a.is_write or a.name in _FACTORY_OPTIONS))
    )
    return namespace, schema.name.removesuffix("_"), arguments


# Modules whose functions define ops on their callers' behalf (define_pointwise and the like).
_DEFINING_HELPERS = frozenset({__name__, "ember.core.pointwise", "ember.core.reduction", "ember.library.library"})


def _caller_outside(modules: frozenset) -> tuple[str, int] | None:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in modules:
        frame = frame.f_back
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def define(schema: str, tags: tuple[str, ...] = (), namespace: str = "aten") -> OpOverload:
    """Register an op by its schema; returns the ``OpOverload`` to attach kernels to."""
    parsed = parse_schema(schema)
    unknown = set(tags) - TAGS
    if unknown:
        raise ValueError(f"define({schema!r}): unknown tags {sorted(unknown)}")
    key = f"{namespace}::{parsed.qualified}"
    if key in _registry:
        raise RuntimeError(f"op {key} is already defined")
    tags = frozenset(tags)
    if parsed.is_inplace or parsed.is_out or parsed.is_mutable:
        # ``core`` is the functional set the code generator lowers; other forms reach it through
        # their functional form (functionalization), so they never carry the tag.
        tags -= {"core"}
    op = OpOverload(namespace, parsed, tags)
    op.defined_at = _caller_outside(_DEFINING_HELPERS)
    space = ops.namespace(namespace)
    packet = space._packets.get(parsed.name)
    if packet is None:
        packet = space._packets[parsed.name] = OpOverloadPacket(namespace, parsed.name)
    packet._overloads[op.overload] = op
    op.packet = packet
    _registry[key] = op
    group = _form_groups.setdefault(_signature(namespace, parsed), {})
    group.setdefault(op.form, op)
    op._forms = group
    return op


def undefine(op: OpOverload) -> None:
    """Remove an op defined by ``define`` (``ember.library.Library`` undoing its registrations)."""
    key = f"{op.namespace}::{op.schema.qualified}"
    if _registry.get(key) is not op:
        raise RuntimeError(f"op {key} is not defined")
    del _registry[key]
    group = _form_groups.get(_signature(op.namespace, op.schema), {})
    if group.get(op.form) is op:
        del group[op.form]
    packet = op.packet
    del packet._overloads[op.overload]
    if not packet._overloads:
        del ops.namespace(op.namespace)._packets[op.name]


def all_ops() -> list[OpOverload]:
    return list(_registry.values())


def lookup(qualified: str) -> OpOverload:
    """``lookup("aten::add.Tensor")``."""
    return _registry[qualified]
