"""A pattern matcher for op-level graphs: find expressions, check them, replace them.

The code generator rewrites graphs of ops (``call_function`` nodes whose targets are
``OpOverload``s such as ``ember.ops.aten.mm.default``) before it lowers them: fusions such as
``addmm`` out of ``mm`` + ``add``, algebraic simplifications, decompositions. Each rewrite is a
*pattern*, a tree of expressions matched against a node and the nodes that compute its
arguments, and a *replacement*, a function called on what the pattern bound. The idea is PyTorch
Inductor's pattern matcher, written smaller.

Patterns are trees of:

- :class:`CallFunction` ``(fns, *args, **kwargs)``: a ``call_function`` node whose target is ``fns``
  (an op, a Python function, or a list of them; an ``OpOverloadPacket`` stands for all its
  overloads), with arguments matching ``args``/``kwargs``. For an op, arguments are compared by
  schema position with defaults filled in, so ``add(x, y)`` matches ``add(x, y, alpha=1)``.
  :class:`CallMethod` is the same for ``call_method`` nodes; :class:`CallFunctionVarArgs` matches a
  call whatever its arguments;
- wildcards: :class:`Arg` (anything, bound to ``match.args`` in order), :class:`KeywordArg`
  ``(name)`` (anything, bound to ``match.kwargs[name]``; used twice, it must bind one value),
  :class:`Ignored` (anything, not bound), :class:`ListOf` ``(pattern)`` (a list each of whose
  elements matches ``pattern``);
- literals (numbers, strings, dtypes, ``None``) equal to the argument, and lists or tuples of
  patterns matching element by element.

A pattern may also be written as a function, traced by :func:`trace_fn`: its parameters become
``KeywordArg``s named after them, a value it uses twice must be one node in the graph. Traced
symbolically, the function calls the ops the graphs hold; given example inputs, it is traced with
``make_fx`` and may be written with ember's functions and operators (``x @ w.t() + b``).

A match is *self-contained*: every node it matched but its root is read only by matched nodes
(unless its pattern says ``_users=MULTIPLE``), so that replacing the root makes them dead. An
``extra_check(match) -> bool`` adds constraints (shapes from ``node.meta``, literal values...).

:class:`PatternMatcherPass` holds ``(pattern, replacement)`` entries and applies them to a graph in
one sweep over its nodes, last to first; each node is tried as the root of the entries registered
for its target, the first that matches and passes its check is replaced, and nodes made by a
replacement are not revisited in that sweep. The replacement is traced on the bound values and
inserted just before the matched root, the root's users read its result, and the matched nodes
left dead are erased. ``apply`` returns the number of replacements.

Example::

    from ember.ops import aten
    from ember.fx.pattern_matcher import PatternMatcherPass

    def pattern(x, w, b):
        return aten.add.Tensor(aten.mm.default(x, aten.t.default(w)), b)

    def replacement(x, w, b):
        return aten.addmm.default(b, x, aten.t.default(w))

    fuse = PatternMatcherPass()
    fuse.register(pattern, replacement)
    count = fuse.apply(gm)  # each mm + add of gm's graph is now one addmm
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember.core.dispatch import OpOverload, OpOverloadPacket
from ember.fx._pattern_tracing import erase_dead, insert_replacement, parameter_names, trace_fn
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node

__all__ = [
    "MULTIPLE",
    "Arg",
    "CallFunction",
    "CallFunctionVarArgs",
    "CallMethod",
    "GraphPatternEntry",
    "Ignored",
    "KeywordArg",
    "ListOf",
    "Match",
    "PatternEntry",
    "PatternExpr",
    "PatternMatcherPass",
    "ReplacementPatternEntry",
    "register_graph_pattern",
    "register_replacement",
    "trace_fn",
]


class _Multiple:
    def __repr__(self) -> str:
        return "MULTIPLE"


# ``_users=MULTIPLE``: the node may also be read outside the match (it is then kept).
MULTIPLE = _Multiple()

# An argument left to its schema default compares equal only to another such argument.
_DEFAULT = object()


class Match:
    """One place a pattern matched: the nodes, the bound values, and how to replace them."""

    def __init__(self, pattern: PatternExpr, graph: Graph) -> None:
        self.pattern = pattern
        self.graph = graph
        self.nodes: list[Node] = []  # the matched nodes, root first
        self.args: list[Any] = []  # values bound to Arg(), in pattern order
        self.kwargs: dict[str, Any] = {}  # values bound to KeywordArg(name)
        self.pattern_to_node: dict[int, Node] = {}  # id of a call pattern -> its node
        self.shared: set[Node] = set()  # matched nodes that may be read outside (_users=MULTIPLE)

    def output_node(self) -> Node:
        """The root of the match: the node the pattern's top expression matched."""
        return self.nodes[0]

    def erase_nodes(self) -> None:
        """Erase the matched nodes that nothing reads any more."""
        erase_dead(self.graph, self.nodes)

    def replace_with(self, replacement: Callable[..., Any]) -> Any:
        """Trace ``replacement(*self.args, **self.kwargs)`` into the graph before the root, make the
        root's users read its result, and erase the matched nodes left dead; returns the new value.

        The replacement may return one of its arguments (``neg(neg(x))`` -> ``x``). A new node that
        takes the root's place gets the root's ``meta`` (``tensor_meta``, ``val``...), since it
        computes the same value; the other new nodes have none.
        """
        root = self.output_node()
        new = insert_replacement(self.graph, root, replacement, self.args, self.kwargs)
        if isinstance(new, Node):
            if new.op != "placeholder" and not any(new is v for v in (*self.args, *self.kwargs.values())):
                # The new node computes the value the root did: what was known of it still holds.
                for key, value in root.meta.items():
                    new.meta.setdefault(key, value)
            root.replace_all_uses_with(new)
        else:
            raise NotImplementedError(
                f"a replacement must return one traced value for the matched node; it returned {new!r}"
            )
        self.erase_nodes()
        return new

    def __repr__(self) -> str:
        return f"Match(root={self.nodes[0] if self.nodes else None}, args={self.args}, kwargs={self.kwargs})"


class PatternExpr:
    """A pattern: matches a value (a node or a literal) and binds into a :class:`Match`."""

    def _match(self, value: Any, m: Match) -> bool:
        raise NotImplementedError

    def match(self, node: Node) -> Match | None:
        """The match of this pattern with ``node`` as its root, or None."""
        m = Match(self, node.graph)
        if not _match(self, node, m):
            return None
        if not _self_contained(m):
            return None
        return m


class Arg(PatternExpr):
    """Anything; the value is appended to ``match.args``."""

    def _match(self, value: Any, m: Match) -> bool:
        m.args.append(value)
        return True

    def __repr__(self) -> str:
        return "Arg()"


class Ignored(PatternExpr):
    """Anything; nothing is bound."""

    def _match(self, value: Any, m: Match) -> bool:
        return True

    def __repr__(self) -> str:
        return "*"


class KeywordArg(PatternExpr):
    """Anything; bound to ``match.kwargs[name]``, and every use of the name must bind one value."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _match(self, value: Any, m: Match) -> bool:
        if self.name in m.kwargs:
            return _same_value(m.kwargs[self.name], value)
        m.kwargs[self.name] = value
        return True

    def __repr__(self) -> str:
        return f"KeywordArg({self.name!r})"


class ListOf(PatternExpr):
    """A list or tuple whose every element matches ``pattern`` (a ``KeywordArg`` in it binds one
    value for all elements)."""

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern

    def _match(self, value: Any, m: Match) -> bool:
        if not isinstance(value, list | tuple):
            return False
        for v in value:
            # Each element is a match of its own of the element pattern: its calls bind afresh.
            scope = dict(m.pattern_to_node)
            if not _match(self.pattern, v, m):
                return False
            m.pattern_to_node = scope
        return True

    def __repr__(self) -> str:
        return f"ListOf({self.pattern!r})"


class _CallPattern(PatternExpr):
    op = ""

    def __init__(self, fns: Any, *args: Any, _users: int | _Multiple = 1, **kwargs: Any) -> None:
        self.fns = list(fns) if isinstance(fns, list | tuple) else [fns]
        self.args = args
        self.kwargs = kwargs
        self.users = _users

    def _targets_match(self, node: Node) -> bool:
        for fn in self.fns:
            if node.target is fn or node.target == fn:
                return True
            if isinstance(fn, OpOverloadPacket) and isinstance(node.target, OpOverload) and node.target.packet is fn:
                return True
        return False

    def _match(self, value: Any, m: Match) -> bool:
        if not isinstance(value, Node):
            return False
        seen = m.pattern_to_node.get(id(self))
        if seen is not None:
            return seen is value  # the same expression twice in the pattern is one node
        if value.op != self.op or not self._targets_match(value):
            return False
        if value in m.nodes:
            return False  # one node cannot stand for two expressions
        m.pattern_to_node[id(self)] = value
        m.nodes.append(value)
        if self.users is MULTIPLE:
            m.shared.add(value)
        return self._match_arguments(value, m)

    def _match_arguments(self, node: Node, m: Match) -> bool:
        same_layout = len(node.args) == len(self.args) and list(node.kwargs) == list(self.kwargs)
        if same_layout:
            pairs = zip([*self.args, *self.kwargs.values()], [*node.args, *node.kwargs.values()], strict=True)
        elif isinstance(node.target, OpOverload):
            pattern_args = _schema_arguments(node.target, self.args, self.kwargs)
            node_args = _schema_arguments(node.target, node.args, node.kwargs)
            if pattern_args is None or node_args is None:
                return False
            pairs = zip(pattern_args, node_args, strict=True)
        else:
            return False
        return all(_match(p, v, m) for p, v in pairs)

    def __repr__(self) -> str:
        fns = self.fns[0] if len(self.fns) == 1 else self.fns
        args = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{type(self).__name__}({', '.join([repr(fns), *args])})"


class CallFunction(_CallPattern):
    """A ``call_function`` node calling one of ``fns`` with arguments matching ``args``/``kwargs``.

    ``_users``: how many nodes may read it when it is not the root: 1 (the default) means only
    nodes of the match; ``MULTIPLE`` lets other nodes read it too (it is then not erased).
    """

    op = "call_function"


class CallMethod(_CallPattern):
    """A ``call_method`` node calling the method named ``fns`` with arguments matching the patterns."""

    op = "call_method"


class CallFunctionVarArgs(CallFunction):
    """A ``call_function`` node calling one of ``fns``, whatever its arguments (none are bound)."""

    def __init__(self, fns: Any, *, _users: int | _Multiple = 1) -> None:
        super().__init__(fns, _users=_users)

    def _match_arguments(self, node: Node, m: Match) -> bool:
        return True


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, Node) or isinstance(b, Node):
        return a is b
    return type(a) is type(b) and a == b


def _match(pattern: Any, value: Any, m: Match) -> bool:
    """Whether ``value`` matches ``pattern``: a pattern expression, a container of them, or a literal."""
    if isinstance(pattern, PatternExpr):
        return pattern._match(value, m)
    if isinstance(pattern, list | tuple):
        if not isinstance(value, list | tuple) or len(pattern) != len(value):
            return False
        return all(_match(p, v, m) for p, v in zip(pattern, value, strict=True))
    if isinstance(value, Node):
        return False
    return _same_value(pattern, value)


def _schema_arguments(op: OpOverload, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any] | None:
    """The arguments of a call to ``op`` in schema order with defaults filled in; None if they do not fit."""
    schema_args = op.schema.arguments
    if len(args) > len(schema_args) or any(k not in {a.name for a in schema_args} for k in kwargs):
        return None
    values = []
    for i, arg in enumerate(schema_args):
        if arg.name in kwargs:
            values.append(kwargs[arg.name])
        elif not arg.kwarg_only and i < len(args):
            values.append(args[i])
        else:
            values.append(arg.default if arg.has_default else _DEFAULT)
    return values


def _self_contained(m: Match) -> bool:
    inside = set(m.nodes)
    # The root may be read anywhere; the other matched nodes only inside the match, unless shared.
    exclusive = [node for node in m.nodes[1:] if node not in m.shared]
    return all(user in inside for node in exclusive for user in node.users)


# -- entries and the pass ------------------------------------------------------------------------


@dataclasses.dataclass
class PatternEntry:
    """A pattern and a check; :meth:`apply` says what to do with a match."""

    pattern: PatternExpr
    extra_check: Callable[[Match], bool]

    def apply(self, match: Match, graph: Graph, node: Node) -> None:
        raise NotImplementedError


@dataclasses.dataclass
class ReplacementPatternEntry(PatternEntry):
    """Replace each match with ``replacement(*match.args, **match.kwargs)``, traced into the graph."""

    replacement: Callable[..., Any]

    def apply(self, match: Match, graph: Graph, node: Node) -> None:
        match.replace_with(self.replacement)


@dataclasses.dataclass
class GraphPatternEntry(PatternEntry):
    """Call ``handler(match, *match.args, **match.kwargs)``, which edits the graph itself."""

    handler: Callable[..., Any]

    def apply(self, match: Match, graph: Graph, node: Node) -> None:
        self.handler(match, *match.args, **match.kwargs)


def _always(match: Match) -> bool:
    return True


def _as_pattern(
    pattern: PatternExpr | Callable[..., Any],
    ignore_types: tuple[type, ...] = (),
    example_inputs: Sequence[Any] | None = None,
) -> PatternExpr:
    if isinstance(pattern, PatternExpr):
        return pattern
    if callable(pattern):
        graph = trace_fn(pattern, example_inputs).graph
        return graph_to_pattern(graph, parameter_names(pattern), ignore_types)
    raise TypeError(f"a pattern is a PatternExpr or a function, got {type(pattern).__name__}")


class PatternMatcherPass:
    """Entries ``(pattern, replacement)`` applied to a graph in one sweep; see the module docstring."""

    def __init__(self, pass_name: str | None = None) -> None:
        self.pass_name = pass_name
        # (op, target) of a pattern's root -> the entries rooted there, in registration order.
        self.patterns: dict[tuple[str, Any], list[PatternEntry]] = {}

    def add(self, entry: PatternEntry) -> PatternEntry:
        root = entry.pattern
        if not isinstance(root, _CallPattern):
            raise TypeError(f"the root of a pattern must be a call (CallFunction, CallMethod), got {root!r}")
        for fn in root.fns:
            targets: Iterable[Any] = [fn]
            if isinstance(fn, OpOverloadPacket):
                targets = [getattr(fn, name) for name in fn.overloads()]
            for target in targets:
                self.patterns.setdefault((root.op, target), []).append(entry)
        return entry

    def register(
        self,
        pattern: PatternExpr | Callable[..., Any],
        replacement: Callable[..., Any],
        extra_check: Callable[[Match], bool] = _always,
        ignore_types: tuple[type, ...] = (),
        example_inputs: Sequence[Any] | None = None,
    ) -> PatternEntry:
        """Replace matches of ``pattern`` (an expression, or a function traced into one) with
        ``replacement``, called on the bound values; ``ignore_types`` and ``example_inputs``: see
        :func:`register_replacement`."""
        entry = ReplacementPatternEntry(_as_pattern(pattern, ignore_types, example_inputs), extra_check, replacement)
        return self.add(entry)

    def __len__(self) -> int:
        return len(self.patterns)

    def apply(self, gm: GraphModule | Graph) -> int:
        """Apply the entries to ``gm``'s graph (recompiling a GraphModule); returns the replacements made."""
        graph = gm.graph if isinstance(gm, GraphModule) else gm
        # The candidates are fixed before the sweep: nodes a replacement inserts are not revisited.
        candidates = [n for n in reversed(graph.nodes) if (n.op, _key_target(n)) in self.patterns]
        count = 0
        for node in candidates:
            if node._erased:
                continue
            for entry in self.patterns[(node.op, _key_target(node))]:
                match = entry.pattern.match(node)
                if match is None or not entry.extra_check(match):
                    continue
                entry.apply(match, graph, node)
                count += 1
                break
        if count and isinstance(gm, GraphModule):
            gm.recompile()
        return count


def _key_target(node: Node) -> Any:
    try:
        hash(node.target)
    except TypeError:
        return None
    return node.target


def register_replacement(
    search_fn: Callable[..., Any],
    replace_fn: Callable[..., Any],
    pass_dict: PatternMatcherPass,
    extra_check: Callable[[Match], bool] = _always,
    ignore_types: tuple[type, ...] = (),
    example_inputs: Sequence[Any] | None = None,
) -> PatternEntry:
    """Trace ``search_fn`` into a pattern and replace its matches in ``pass_dict``'s graphs with
    ``replace_fn``, which takes the same parameters. Literals of a type in ``ignore_types`` in the
    search function (``(int, float)`` for a pattern meant for any scalar) match any value.

    With ``example_inputs`` (one per parameter), ``search_fn`` is traced with ``make_fx`` on them,
    so it may be written with ember's functions and operators and still match the ops of op-level
    graphs; without, it is traced symbolically and should call the ops the graphs hold.
    """
    return pass_dict.register(search_fn, replace_fn, extra_check, ignore_types, example_inputs)


def register_graph_pattern(
    pattern: PatternExpr | Callable[..., Any],
    pass_dict: PatternMatcherPass,
    extra_check: Callable[[Match], bool] = _always,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: call the decorated ``handler(match, *args, **kwargs)`` on each match of ``pattern``
    in ``pass_dict``'s graphs; the handler edits the graph (``match.replace_with(fn)``...)."""

    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        pass_dict.add(GraphPatternEntry(_as_pattern(pattern), extra_check, handler))
        return handler

    return register


def graph_to_pattern(
    graph: Graph, argnames: Sequence[str] | None = None, ignore_types: tuple[type, ...] = ()
) -> PatternExpr:
    """The pattern tree of a traced search function: one ``KeywordArg`` per placeholder, named by
    ``argnames`` in order (by the placeholders' names without them).

    A value used twice in the graph is one pattern object used twice, which must match one node.
    Literal arguments of a type in ``ignore_types`` match any value (``Ignored``).
    """
    patterns: dict[Node, Any] = {}

    def convert(arg: Any) -> Any:
        if isinstance(arg, Node):
            return patterns[arg]
        if isinstance(arg, list | tuple):
            return type(arg)(convert(a) for a in arg) if not hasattr(arg, "_fields") else arg
        if ignore_types and isinstance(arg, ignore_types):
            return Ignored()
        return arg

    output = None
    names = iter(argnames) if argnames is not None else None
    for node in graph.nodes:
        if node.op == "placeholder":
            patterns[node] = KeywordArg(next(names) if names is not None else node.target)  # type: ignore[arg-type]
        elif node.op == "call_function":
            args, kwargs = convert(list(node.args)), {k: convert(v) for k, v in node.kwargs.items()}
            patterns[node] = CallFunction(node.target, *args, **kwargs)
        elif node.op == "call_method":
            args, kwargs = convert(list(node.args)), {k: convert(v) for k, v in node.kwargs.items()}
            patterns[node] = CallMethod(node.target, *args, **kwargs)
        elif node.op == "output":
            output = node.args[0]
        else:
            raise NotImplementedError(f"pattern functions cannot hold {node.op} nodes ({node.format_node()})")
    if not isinstance(output, Node):
        raise NotImplementedError(
            f"a pattern function must return one traced value; patterns with several outputs are not supported "
            f"(returned {output!r})"
        )
    if output.op == "placeholder":
        raise ValueError("a pattern function must compute something: it returned its parameter")
    return patterns[output]
