"""A picklable description of a ``Graph``, for pickling ``GraphModule``s.

PyTorch pickles a ``GraphModule`` as its generated code and rebuilds the graph by symbolically
tracing that code. We pickle the nodes themselves instead (op, name, target, arguments), with every
callable they name replaced by how the generated code reaches it: a global of the import block, or
a dotted ``ember.`` path. Loading resolves those against the import block, so it needs neither the
original objects nor a tracer, and gives back the same graph, node names included.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any, NamedTuple

from ember.fx._codegen import _custom_builtins, _is_from_ember
from ember.fx._names import _ember_public_name, _get_qualified_name, _is_ember_object
from ember.fx.graph import Graph
from ember.fx.node import Node, map_aggregate

__all__ = ["graph_from_payload", "graph_to_payload"]


class _NodeRef:
    """An argument that is the node of this name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> tuple:
        return (_NodeRef, (self.name,))


class _GlobalRef:
    """A callable: a name the import block defines, a dotted ``ember.`` path, or ``module``'s attribute."""

    __slots__ = ("module", "name")

    def __init__(self, name: str, module: str | None = None) -> None:
        self.name = name
        self.module = module

    def __reduce__(self) -> tuple:
        return (_GlobalRef, (self.name, self.module))


class _NodeRecord(NamedTuple):
    op: str
    name: str
    target: Any
    args: Any
    kwargs: Any


class _GraphPayload(NamedTuple):
    nodes: list[_NodeRecord]
    codegen: Any  # the graph's CodeGen, without a body transformer (usually a closure)


def graph_to_payload(graph: Graph, globals_: dict[str, Any]) -> _GraphPayload:
    by_id = {id(obj): name for name, obj in globals_.items()}

    def encode(x: Any) -> Any:
        if isinstance(x, Node):
            return _NodeRef(x.name)
        if callable(x) and not isinstance(x, type):
            if _is_from_ember(x):
                return _GlobalRef(_get_qualified_name(x))
            if id(x) in by_id:
                return _GlobalRef(by_id[id(x)])
            name = _get_qualified_name(x)
            if "." not in name:
                return _GlobalRef(name)  # a builtin, such as getattr
            return _GlobalRef(x.__qualname__, x.__module__)
        return x

    records = []
    for node in graph.nodes:
        target = encode(node.target) if node.op == "call_function" else node.target
        args = _plain(map_aggregate(node.args, encode))
        kwargs = _plain(map_aggregate(node.kwargs, encode))
        records.append(_NodeRecord(node.op, node.name, target, args, kwargs))
    codegen = copy.copy(graph._codegen)
    codegen._body_transformer = None
    return _GraphPayload(records, codegen)


def graph_from_payload(payload: _GraphPayload, namespace: dict[str, Any]) -> Graph:
    graph = Graph()
    graph.set_codegen(payload.codegen)
    nodes: dict[str, Node] = {}

    def resolve(ref: _GlobalRef) -> Any:
        if ref.module is not None:
            obj: Any = importlib.import_module(ref.module)
            for part in ref.name.split("."):
                obj = getattr(obj, part)
            return obj
        if ref.name in namespace:
            return namespace[ref.name]
        # A builtin (getattr) or a dotted ``ember.`` path (ember.relu, ember.ops.aten.add.Tensor).
        return eval(ref.name, namespace)

    def decode(x: Any) -> Any:
        if isinstance(x, _NodeRef):
            return nodes[x.name]
        if isinstance(x, _GlobalRef):
            return resolve(x)
        return x

    for rec in payload.nodes:
        target = decode(rec.target) if rec.op == "call_function" else rec.target
        args = map_aggregate(rec.args, decode)
        kwargs = map_aggregate(rec.kwargs, decode)
        nodes[rec.name] = graph.create_node(rec.op, target, args, kwargs, name=rec.name)  # type: ignore[arg-type]
    return graph


def _plain(x: Any) -> Any:
    """Immutable containers as plain ones, so that the pickle names no ember.fx class for them."""
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_plain(e) for e in x)
    if isinstance(x, list):
        return [_plain(e) for e in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


# -- the import block: how to get each global of the generated code back -----------------------------


def _format_import_statement(name: str, obj: Any) -> str:
    if name in _custom_builtins:
        return _custom_builtins[name].import_str
    if _is_ember_object(obj):
        public = _ember_public_name(obj)
        if public is not None:
            return f"import ember; {name} = {public}"
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if module is None or qualname is None or "<locals>" in qualname or _lookup(module, qualname) is not obj:
        raise RuntimeError(f"cannot pickle the global {name} = {obj!r} of a GraphModule: it is not importable")
    return f"from {module} import {qualname} as {name}"


def _lookup(module: str, qualname: str) -> Any:
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


def _format_import_block(globals: dict[str, Any]) -> str:
    # Sorted, so that equal modules give equal text.
    return "\n".join(sorted({_format_import_statement(name, obj) for name, obj in globals.items()}))
