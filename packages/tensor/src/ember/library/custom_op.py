"""``custom_op``: a Python function turned into an op of the dispatcher, as ``torch.library.custom_op``.

The decorated function's type hints give the schema (``infer_schema``); the op is defined through
``ember.core.dispatch`` like every built-in op, so it is ``ember.ops.<ns>.<name>.default``, dispatch
modes see it, and its kernels sit in the usual slots: the function itself for its device types (or
for every device), ``register_fake``'s function as the meta kernel, ``register_kernel``'s per device.
Until a fake kernel is registered, the meta kernel raises PyTorch's "no fake impl" error.
``register_autograd`` stores ``(backward, setup_context)`` on the op (``OpOverload.autograd``), where
the autograd layer looks for a custom op's derivative.

Defining a custom op again under the same name replaces the first one, as in PyTorch; a name taken
by any other op is an error.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from ember.core.devices import device

from .infer_schema import infer_schema
from .library import RESERVED_NAMESPACES, Library, check_identifier, parse_namespace

# Live custom ops by qualified name, and the library that holds each one's registrations.
OPDEFS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_LIBRARIES: dict[str, Library] = {}


def _device_types(device_types) -> list[str | None]:
    if device_types is None or isinstance(device_types, str):
        types = [device_types]
    elif isinstance(device_types, Sequence):
        types = list(device_types)
    else:
        raise TypeError(f"device_types must be None, a str or a sequence of str, got {type(device_types).__name__}")
    for t in types:
        if t is not None:
            device(t)  # PyTorch's RuntimeError for an unknown device type
    return types


class CustomOpDef:
    """A custom op: call it, or reach it as ``ember.ops.<ns>.<name>``; add kernels with the methods."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable, tags=()) -> None:
        self._namespace = namespace
        self._name = name
        self._schema = schema
        self._init_fn = fn
        self._backend_fns: dict[str | None, Callable] = {}
        self._abstract_fn: Callable | None = None
        self._backward_fn: Callable | None = None
        self._setup_context_fn: Callable | None = None
        previous = _LIBRARIES.pop(self._qualname, None)
        if previous is not None:
            previous._destroy()
        self._lib = Library(namespace, "FRAGMENT")
        self._lib.define(f"{name}{schema}", tags=tags)
        _LIBRARIES[self._qualname] = self._lib
        self._opoverload = self._lib._records[-1][1]
        self._lib.register(self._opoverload, "meta", self._no_fake)
        OPDEFS[self._qualname] = self

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    def _no_fake(self, *args, **kwargs):
        raise RuntimeError(
            f"There was no fake impl registered for {self}. This is necessary for ember.compile/export/fx tracing to "
            f"work. Please use `{getattr(self._init_fn, '__name__', self._name)}.register_fake` to add an fake impl."
        )

    def register_kernel(self, device_types, fn: Callable | None = None, /):
        """Register ``fn`` as the kernel for ``device_types`` (None: every device); usable as a decorator."""
        types = _device_types(device_types)

        def inner(fn: Callable) -> Callable:
            for t in types:
                self._backend_fns[t] = fn
                self._lib.register(self._opoverload, "CompositeExplicitAutograd" if t is None else t, fn)
            return fn

        return inner if fn is None else inner(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """Register the fake (meta) kernel: it makes outputs of the right shape, dtype and strides, no data."""
        self._abstract_fn = fn
        self._lib.register(self._opoverload, "meta", fn)
        return fn

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """Register the op's derivative: ``backward(ctx, *grads)``, after ``setup_context(ctx, inputs, output)``."""
        schema = self._opoverload.schema
        if schema.is_mutable:
            raise RuntimeError(
                f"Cannot register autograd formula for non-functional operator {self} with schema {schema}. Please "
                "create a functional operator and register an autograd formula for that."
            )
        self._backward_fn = backward
        self._setup_context_fn = setup_context
        self._opoverload.autograd = (backward, setup_context)


def custom_op(
    name: str,
    fn: Callable | None = None,
    /,
    *,
    mutates_args,
    device_types=None,
    schema: str | None = None,
    tags=None,
):
    """Wrap ``fn`` as the op ``"namespace::name"``; usable as a decorator.

    ``mutates_args`` names the arguments the function writes to (``()`` for none, or ``"unknown"``);
    the schema marks them ``Tensor(a!)``.
    """
    namespace, opname = parse_namespace(name)
    check_identifier(namespace, "namespace")
    check_identifier(opname, "op name")
    if namespace in RESERVED_NAMESPACES:
        raise ValueError(f"custom_op: the namespace {namespace!r} is reserved for Ember's own ops")
    types = _device_types(device_types)

    def inner(fn: Callable) -> CustomOpDef:
        text = infer_schema(fn, mutates_args=mutates_args) if schema is None else schema
        op = CustomOpDef(namespace, opname, text, fn, () if tags is None else tags)
        for t in types:
            op.register_kernel(t, fn)
        return op

    return inner if fn is None else inner(fn)
