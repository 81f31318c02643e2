"""``ember.library``: custom operators, as ``torch.library`` offers them.

``custom_op`` (``custom_op.py``) turns a typed Python function into a dispatcher op; ``Library``
(``library.py``) is the low-level define/impl API; the functions below are ``torch.library``'s
module-level helpers, which work on custom ops and on ops defined with ``Library`` alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ember.core.dispatch import OpOverload

from .custom_op import OPDEFS, CustomOpDef, custom_op
from .describe import describe, register_describer
from .infer_schema import infer_schema
from .library import Library, kernel_slot, lookup, parse_namespace

__all__ = [
    "CustomOpDef",
    "Library",
    "custom_op",
    "define",
    "describe",
    "impl",
    "infer_schema",
    "register_autograd",
    "register_describer",
    "register_fake",
    "register_kernel",
]

# Libraries made by the functions below on the caller's behalf; kept alive like PyTorch's.
_keep_alive: list[Library] = []
# Ops whose meta kernel came from register_fake (which may replace it again).
_fakes: set[int] = set()


def _library(namespace: str, lib: Library | None) -> Library:
    if lib is not None:
        return lib
    lib = Library(namespace, "FRAGMENT")
    _keep_alive.append(lib)
    return lib


def _opdef(op) -> CustomOpDef | None:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpOverload):
        return OPDEFS.get(f"{op.namespace}::{op.schema.qualified}")
    return OPDEFS.get(op) if isinstance(op, str) else None


def define(qualname: str, schema: str, *, lib: Library | None = None, tags=()) -> None:
    """Define the op ``qualname`` (``"mylib::foo"``) with ``schema`` (``"(Tensor x) -> Tensor"``)."""
    namespace, name = parse_namespace(qualname)
    _library(namespace, lib).define(name + schema, tags=tags)


def impl(qualname, types, func: Callable | None = None, *, lib: Library | None = None):
    """Register ``func`` as the kernel of ``qualname`` for ``types`` (device types or dispatch keys)."""
    keys = [types] if isinstance(types, str) else list(types)

    def register(func: Callable) -> Callable:
        opdef = _opdef(qualname)
        if opdef is not None:
            opdef.register_kernel(keys, func)
            return func
        op = lookup(qualname)
        library = _library(op.namespace, lib)
        for key in keys:
            library.register(op, key, func)
        return func

    return register if func is None else register(func)


def register_kernel(op, device_types, func: Callable | None = None, /, *, lib: Library | None = None):
    """Register ``func`` as ``op``'s kernel for ``device_types`` (None: every device)."""
    if device_types is not None and not isinstance(device_types, str | Sequence):
        raise TypeError(f"device_types must be None, a str or a sequence of str, got {type(device_types).__name__}")
    opdef = _opdef(op)
    if opdef is not None:
        return opdef.register_kernel(device_types, func)
    keys = ["CompositeExplicitAutograd"] if device_types is None else device_types
    return impl(op, keys, func, lib=lib)


def register_fake(op, func: Callable | None = None, /, *, lib: Library | None = None, _stacklevel: int = 1):
    """Register ``op``'s fake kernel (its meta kernel: output metadata without data)."""

    def register(func: Callable) -> Callable:
        opdef = _opdef(op)
        if opdef is not None:
            return opdef.register_fake(func)
        target = lookup(op)
        if target._kernels.get("meta") is not None and id(target) not in _fakes:
            raise RuntimeError(
                f"register_fake(...): the operator {target.namespace}::{target.schema.qualified} already has a Meta "
                "implementation via a pre-existing registration. Please either remove that registration or don't "
                "call register_fake."
            )
        _library(target.namespace, lib).register(target, kernel_slot("Meta"), func)
        _fakes.add(id(target))
        return func

    return register if func is None else register(func)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None, lib=None) -> None:
    """Register ``op``'s derivative: ``backward(ctx, *grads)`` after ``setup_context(ctx, inputs, output)``."""
    opdef = _opdef(op)
    if opdef is not None:
        opdef.register_autograd(backward, setup_context=setup_context)
        return
    target = lookup(op)
    if target.schema.is_mutable:
        raise RuntimeError(
            f"Cannot register autograd formula for non-functional operator {target} with schema {target.schema}."
        )
    target.autograd = (backward, setup_context)
