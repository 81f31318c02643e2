"""``Library``: the low-level registration API (``torch.library.Library``), and lookups shared by the rest.

A ``Library`` defines ops in a namespace (``kind="DEF"``, one per namespace, or ``"FRAGMENT"``) and
registers kernels for them or for existing ops (``"IMPL"``), all through the one dispatcher
(``ember.core.dispatch``). It remembers every registration and what it replaced, so ``_destroy()``
(called when the library is garbage-collected, as in PyTorch) puts the dispatcher back as it was.

Dispatch keys map to the dispatcher's kernel slots: ``CPU``/``CUDA``/``Meta`` to that device's
kernel, ``CompositeExplicitAutograd`` to the kernel for every device (``"*"``),
``CompositeImplicitAutograd`` (the default) to the op's decomposition.
"""

from __future__ import annotations

import keyword
import weakref
from collections.abc import Callable

from ember.core import dispatch
from ember.core.dispatch import OpOverload
from ember.core.schema import parse_schema

_KINDS = ("DEF", "IMPL", "FRAGMENT")
# Namespaces whose ops Ember itself defines; no library may DEF them.
RESERVED_NAMESPACES = frozenset({"aten", "prim", "prims"})
_def_namespaces: set[str] = set()
_DISPATCH_KEYS = {
    "CPU": "cpu",
    "CUDA": "cuda",
    "Meta": "meta",
    "CompositeExplicitAutograd": "*",
    "CompositeExplicitAutogradNonFunctional": "*",
    "CompositeImplicitAutograd": "decomposition",
}


def parse_namespace(qualname: str) -> tuple[str, str]:
    if not isinstance(qualname, str):
        raise TypeError(f"expected an op name 'namespace::name', got {type(qualname).__name__}")
    parts = qualname.split("::")
    if len(parts) != 2:
        raise ValueError(
            f'Expected `qualname` to be of the form "namespace::name", but got {qualname}. The qualname passed to '
            "the ember.library APIs must consist of a namespace and a name, e.g. aten::sin"
        )
    return parts[0], parts[1]


def check_identifier(text: str, what: str) -> None:
    if not text.isidentifier() or keyword.iskeyword(text):
        raise RuntimeError(f"expected ident but found {text!r} as the {what}")


def lookup(op) -> OpOverload:
    """The ``OpOverload`` for ``op``: an OpOverload, or a name ``"ns::name"`` / ``"ns::name.overload"``."""
    if isinstance(op, OpOverload):
        return op
    namespace, name = parse_namespace(op)
    if name.endswith(".default"):
        name = name[: -len(".default")]
    try:
        return dispatch.lookup(f"{namespace}::{name}")
    except KeyError:
        raise RuntimeError(f"operator {namespace}::{name} does not exist") from None


def get_kernel(op: OpOverload, slot: str) -> Callable | None:
    return op.decomposition if slot == "decomposition" else op._kernels.get(slot)


def set_kernel(op: OpOverload, slot: str, fn: Callable | None) -> None:
    """Put ``fn`` in one of the op's kernel slots (None empties it)."""
    if slot == "decomposition":
        op.decomposition = fn
        return
    if fn is None:
        op._kernels.pop(slot, None)
    else:
        op._kernels[slot] = fn
    if slot == "*":
        op._any = fn


def _undo(records: list, namespace: str | None) -> None:
    # Newest first, so that a kernel replaced twice ends as it began.
    while records:
        record = records.pop()
        if record[0] == "def":
            op = record[1]
            if dispatch._registry.get(f"{op.namespace}::{op.schema.qualified}") is op:
                dispatch.undefine(op)
        else:
            _, op, slot, previous = record
            set_kernel(op, slot, previous)
    if namespace is not None:
        _def_namespaces.discard(namespace)


class Library:
    """``Library(ns, kind)``: define ops in namespace ``ns`` and register their kernels."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if not isinstance(ns, str):
            raise TypeError(f"Library namespace must be a str, got {type(ns).__name__}")
        check_identifier(ns, "namespace")
        if kind == "DEF":
            if ns in _def_namespaces or ns in RESERVED_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all of your "
                    "definitions in a single TORCH_LIBRARY block. If you were trying to specify implementations, "
                    "consider using Library(ns, 'IMPL'); to define operators for one namespace in several places, "
                    "use Library(ns, 'FRAGMENT')."
                )
            _def_namespaces.add(ns)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._records: list = []
        self._finalizer = weakref.finalize(self, _undo, self._records, ns if kind == "DEF" else None)

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Define an op from its schema (``"foo(Tensor x) -> Tensor"``); returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed on a Library of kind IMPL; use DEF or FRAGMENT")
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        text = schema.split("::", 1)[1] if "::" in schema.split("(", 1)[0] else schema
        check_identifier(text.split("(", 1)[0].split(".", 1)[0].strip(), "op name")
        tags = (tags,) if isinstance(tags, str) else tuple(tags)
        try:
            op = dispatch.define(text, tags, namespace=self.ns)
        except RuntimeError as error:
            raise RuntimeError(
                f"Tried to register an operator ({self.ns}::{text}) with the same name and overload name multiple "
                f"times. Each overload's schema should only be registered with a single call to define(). ({error})"
            ) from None
        self._records.append(("def", op))
        return parse_schema(text).qualified

    def impl(self, op_name, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Register ``fn`` as the kernel of ``op_name`` for ``dispatch_key``."""
        if with_keyset:
            raise NotImplementedError("Library.impl(with_keyset=True) is not supported")
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        op = op_name if isinstance(op_name, OpOverload) else lookup(self._qualify(op_name))
        self.register(op, dispatch_key or self.dispatch_key or "CompositeImplicitAutograd", fn)

    def _qualify(self, name: str) -> str:
        return name if "::" in name else f"{self.ns}::{name}"

    def register(self, op: OpOverload, dispatch_key: str, fn: Callable | None) -> None:
        """Put ``fn`` in the kernel slot for ``dispatch_key`` (a dispatch key or a device type)."""
        slot = kernel_slot(dispatch_key)
        self._records.append(("impl", op, slot, get_kernel(op, slot)))
        set_kernel(op, slot, fn)

    def _destroy(self) -> None:
        self._finalizer()


def kernel_slot(key: str) -> str:
    """The dispatcher slot for a dispatch key (``"CPU"``) or a device type (``"cpu"``)."""
    if key in _DISPATCH_KEYS:
        return _DISPATCH_KEYS[key]
    if key in ("cpu", "cuda", "meta", "mps", "xpu", "privateuseone"):
        return key
    if key.startswith("Autograd"):
        raise NotImplementedError(f"kernels for {key} are not supported; use ember.library.register_autograd")
    raise ValueError(f"unknown dispatch key or device type {key!r}")
