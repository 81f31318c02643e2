"""Tracing the functions of the pattern matcher: search patterns and their replacements.

A pattern is written as a Python function over ops (``aten.mm.default(x, w)``) or over ember's
functions and operators. :func:`trace_fn` traces it with :class:`ember.fx.Tracer`, which records
ember's functions, operators and methods, while a dispatch mode records each call of an
``OpOverload`` on a traced value as a ``call_function`` node whose target is the op itself: the
form of the op-level graphs the code generator works on. An op that the dispatcher decomposes
before modes see it (``composite_implicit``) is recorded as its parts, as in those graphs.

:func:`graph_to_pattern` turns such a graph into a pattern tree (placeholders become
``KeywordArg``s named after the parameters); :func:`insert_replacement` traces a replacement on the
values a match bound and copies its nodes into the matched graph.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ember.core.dispatch import DispatchMode, OpOverload
from ember.fx._symbolic_trace import Tracer
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_aggregate
from ember.fx.proxy import Proxy

__all__ = ["erase_dead", "insert_replacement", "parameter_names", "trace_fn"]

# Marks a parameter that is a graph value (a placeholder) rather than a constant.
_INPUT = object()


class _RecordOps(DispatchMode):
    """Records op calls on proxies as ``call_function`` nodes; other op calls run as usual."""

    def __ember_dispatch__(self, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        tracer = _find_tracer((args, kwargs))
        if tracer is None:
            return func(*args, **kwargs)
        # Named after the op (mm, mm_1...), as make_fx names its nodes.
        proxy = tracer.create_proxy("call_function", func, args, kwargs, name=str(func.name))
        returns = func.schema.returns
        if len(returns) > 1:
            return tuple(proxy[i] for i in range(len(returns)))
        return proxy


def _find_tracer(tree: Any) -> Any:
    found = []

    def visit(x: Any) -> Any:
        if isinstance(x, Proxy) and not found:
            found.append(x.tracer)
        return x

    map_aggregate(tree, visit)
    return found[0] if found else None


class _FunctionTracer(Tracer):
    """Traces a function given each parameter's value: ``_INPUT`` makes it a placeholder."""

    def __init__(self, values: Sequence[tuple[str, Any]]) -> None:
        super().__init__()
        self._values = values

    def create_args_for_root(
        self, root_fn: Callable[..., Any], is_module: bool, concrete_args: Any = None
    ) -> tuple[Callable[..., Any], list[Any]]:
        args = [
            self.create_proxy("placeholder", name, (), {}) if value is _INPUT else value for name, value in self._values
        ]
        return root_fn, args


def parameter_names(fn: Callable[..., Any]) -> list[str]:
    params = inspect.signature(fn).parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
        raise TypeError(f"pattern functions take plain positional parameters: {fn.__name__}{inspect.signature(fn)}")
    return [p.name for p in params]


def _trace(fn: Callable[..., Any], values: Sequence[tuple[str, Any]]) -> GraphModule:
    tracer = _FunctionTracer(values)
    with _RecordOps():
        graph = tracer.trace(fn)
    # Outputs of multi-output ops that nothing reads (their getitem nodes) go, as in graphs after
    # dead code elimination, so that they do not count as users outside a match.
    graph.eliminate_dead_code()
    return GraphModule(tracer.root, graph, fn.__name__)


def trace_fn(fn: Callable[..., Any], example_inputs: Sequence[Any] | None = None) -> GraphModule:
    """Trace ``fn`` into a graph with one placeholder per parameter.

    Without ``example_inputs``, symbolically: op overload calls are recorded as themselves, ember's
    functions, operators and methods as ``symbolic_trace`` records them. With ``example_inputs``,
    with ``make_fx`` on them: every computation becomes the ops a backend would run, the form of
    op-level graphs (``x @ w.t() + b`` becomes ``t``, ``mm``, ``add``).
    """
    names = parameter_names(fn)
    if example_inputs is None:
        return _trace(fn, [(name, _INPUT) for name in names])
    if len(example_inputs) != len(names):
        raise TypeError(f"{fn.__name__} takes {len(names)} arguments, {len(example_inputs)} example inputs given")
    from ember.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(fn)(*example_inputs)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def insert_replacement(
    graph: Graph, before: Node, replacement: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]
) -> Any:
    """Trace ``replacement(*args, **kwargs)``, whose node values become placeholders, and copy its
    nodes into ``graph`` before ``before``; returns the copied value it returns."""
    bound = inspect.signature(replacement).bind(*args, **kwargs)
    bound.apply_defaults()
    values = []
    inputs: dict[str, Node] = {}
    for name, value in bound.arguments.items():
        if isinstance(value, Node):
            values.append((name, _INPUT))
            inputs[name] = value
        else:
            values.append((name, value))
    gm = _trace(replacement, values)
    val_map: dict[Node, Any] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val_map[node] = inputs[node.target]  # type: ignore[index]
        elif node.op == "get_attr":
            raise NotImplementedError(
                f"a replacement that reads constants or attributes ({node.target}) is not supported; "
                "pass the tensors as arguments"
            )
    with graph.inserting_before(before):
        return graph.graph_copy(gm.graph, val_map)


def erase_dead(graph: Graph, nodes: Sequence[Node]) -> None:
    """Erase those of ``nodes`` that nothing reads any more (and that have no side effect)."""
    # Later nodes first, so that a node's users among ``nodes`` go before it.
    for node in sorted(set(nodes), reverse=True):
        if not node._erased and not node.users and not node.is_impure():
            graph.erase_node(node)
