"""``Graph``: the ordered list of ``Node``s of one function, as in ``torch.fx``.

A graph owns its nodes (a circular linked list through a sentinel root node), their names (one
``_Namespace``: no two nodes share a name) and the place new nodes go (the insertion point,
moved with ``inserting_before``/``inserting_after``). ``python_code`` turns it into the source of a
``forward`` function through its ``CodeGen``; ``GraphModule`` runs that source.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import logging
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ember.fx._codegen import (
    CodeGen,
    PythonCode,
    _is_magic,
    _Namespace,
    _snake_case,
    inplace_methods,
    magic_methods,
    reflectable_magic_methods,
)
from ember.fx._names import _target_name
from ember.fx.node import Argument, Node, Target, _legal_ops, map_arg

if TYPE_CHECKING:
    from ember.fx.graph_module import GraphModule

__all__ = ["CodeGen", "Graph", "PythonCode", "inplace_methods", "magic_methods", "reflectable_magic_methods"]

log = logging.getLogger(__name__)

TransformCodeFunc = Callable[[list[str]], list[str]]


class _InsertPoint:
    """Restores the graph's previous insertion point on exit."""

    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        self.graph._insert = self.orig_insert


class _node_list:
    """A live view of a graph's nodes; safe to iterate while nodes are erased or inserted."""

    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        if direction not in ("_next", "_prev"):
            raise AssertionError(f"direction must be '_next' or '_prev', got {direction}")
        self.graph = graph
        self.direction = direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            # An erased node keeps its links, so iteration continues past a node erased under it.
            if not cur._erased:
                yield cur
            cur = getattr(cur, self.direction)

    def __reversed__(self) -> Iterator[Node]:
        return iter(_node_list(self.graph, "_next" if self.direction == "_prev" else "_prev"))


class _FindNodesLookupTable:
    """The nodes of a graph by ``(op, target)`` (target for ``call_function`` only), for ``find_nodes``."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, Any], dict[Node, None]] = {}

    @staticmethod
    def _key(node: Node) -> tuple[str, Any]:
        return (node.op, node.target if node.op == "call_function" else None)

    def __contains__(self, node: Node) -> bool:
        return node in self.table.get(self._key(node), ())

    def insert(self, node: Node) -> None:
        self.table.setdefault(self._key(node), {})[node] = None
        node._indexed = True

    def remove(self, node: Node) -> None:
        self.table[self._key(node)].pop(node)
        node._indexed = False

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        if op == "call_function":
            if target is None:
                raise AssertionError("target must not be None for call_function op")
            return list(self.table.get((op, target), ()))
        nodes = self.table.get((op, None), ())
        return list(nodes) if target is None else [n for n in nodes if n.target == target]


class Graph:
    """The nodes of one function in order, with the API to build, edit, check and print them."""

    def __init__(
        self,
        owning_module: GraphModule | None = None,
        tracer_cls: type | None = None,
        tracer_extras: dict[str, Any] | None = None,
    ) -> None:
        self._root: Node = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert: Callable[[Node], None] = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields: dict[str, Any] = {}
        self._find_nodes_lookup_table = _FindNodesLookupTable()

    @property
    def owning_module(self) -> GraphModule | None:
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: GraphModule | None) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _node_list:
        """The nodes in order (``reversed(graph.nodes)`` walks back); edits during iteration are safe."""
        return _node_list(self)

    def output_node(self) -> Node:
        node = next(iter(reversed(self.nodes)))
        if node.op != "output":
            raise AssertionError(f"Expected output node, got op={node.op}")
        return node

    def find_nodes(self, *, op: str, target: Target | None = None, sort: bool = True) -> list[Node]:
        """The nodes with this ``op`` (and ``target``, required for ``call_function``), in graph order."""
        nodes = self._find_nodes_lookup_table.find_nodes(op=op, target=target)
        return sorted(nodes) if sort else nodes

    # -- building -----------------------------------------------------------------------------

    def create_node(
        self,
        op: str,
        target: Target,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Create a node and insert it at the current insertion point (the end, by default)."""
        if op not in _legal_ops or op == "root":
            raise AssertionError(f"op '{op}' is not a legal opcode")
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        owner = self.owning_module
        for hook in getattr(owner, "_create_node_hooks", None) or ():
            hook(n)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._find_nodes_lookup_table.insert(n)
        self._len += 1
        return n

    def placeholder(
        self, name: str, type_expr: Any | None = None, default_value: Any = inspect.Signature.empty
    ) -> Node:
        """An input of the function; ``default_value`` makes it optional."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Read an attribute (parameter, buffer, submodule, constant) of the owning module."""
        if self.owning_module is not None and not _attr_exists(self.owning_module, qualified_name):
            warnings.warn(
                "Attempted to insert a get_attr Node with no underlying reference in the owning "
                "GraphModule! Call GraphModule.add_submodule to add the necessary submodule, "
                "GraphModule.add_parameter to add the necessary Parameter, or "
                "nn.Module.register_buffer to add the necessary buffer",
                stacklevel=2,
            )
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(
        self,
        module_name: str,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Call the submodule at ``module_name`` (a dotted path) of the owning module."""
        if self.owning_module is not None:
            try:
                self.owning_module.get_submodule(module_name)
            except AttributeError:
                warnings.warn(
                    "Attempted to insert a call_module Node with no underlying reference in the owning "
                    "GraphModule! Call GraphModule.add_submodule to add the necessary submodule",
                    stacklevel=2,
                )
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(
        self,
        method_name: str,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Call the method ``method_name`` of ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(
        self,
        the_function: Callable[..., Any],
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
        name: str | None = None,
    ) -> Node:
        """Call a free function (``operator.add``, ``ember.relu``, an op overload, ...)."""
        return self.create_node("call_function", the_function, args, kwargs, name=name, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """The function's return value."""
        return self.create_node(op="output", target="output", args=(result,), type_expr=type_expr)

    def _target_to_str(self, target: Target | None) -> str:
        if callable(target):
            op = _target_name(target)
        else:
            if not isinstance(target, str):
                raise AssertionError(f"Expected target to be str, got {type(target)}")
            op = target
            if _is_magic(op):
                op = op[2:-2]
        return _snake_case(op)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """Copy ``node`` (of any graph) into this graph, its node arguments mapped by ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)  # type: ignore[arg-type]
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False) -> Any:
        """Copy every node of ``g`` but its output into this graph; ``val_map`` maps old nodes to new.

        Returns the value ``g`` outputs, mapped into this graph (with the output node itself when
        ``return_output_node``), or None when ``g`` has no output.
        """
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if output_vals is not None:
            output_val, old_output = output_vals
            new_output = g.output(output_val, type_expr=getattr(old_output, "type", None))
            new_output.meta = copy.copy(old_output.meta)
        return g

    # -- editing ------------------------------------------------------------------------------

    def erase_node(self, to_erase: Node) -> None:
        """Remove ``to_erase``, which nothing may still use."""
        if len(to_erase.users) > 0:
            raise RuntimeError(
                f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                f"users in the graph: {to_erase.users}!"
            )
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        for hook in getattr(self.owning_module, "_erase_node_hooks", None) or ():
            hook(to_erase)
        self._find_nodes_lookup_table.remove(to_erase)
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        # Drop its inputs so that they no longer count it among their users.
        to_erase._update_args_kwargs(
            map_arg(to_erase._args, lambda n: None),  # type: ignore[arg-type]
            map_arg(to_erase._kwargs, lambda n: None),  # type: ignore[arg-type]
        )

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Within ``with``, new nodes go just before ``n`` (the start of the graph when None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Within ``with``, new nodes go just after ``n`` (the end of the graph when None)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase the nodes nothing uses and that have no side effects; returns whether any went."""
        self.lint()

        def has_side_effect(node: Node) -> bool:
            return is_impure_node(node) if is_impure_node is not None else node.is_impure()

        removed: list[str] = []
        for node in reversed(self.nodes):
            if not node.users and not has_side_effect(node):
                self.erase_node(node)
                removed.append(node.name)
        changed = bool(removed)
        if changed:
            log.info("The following nodes were dead code eliminated: %s", removed)
        owner = self.owning_module
        if owner is not None:
            attr_names = {n.target for n in self.find_nodes(op="get_attr")}
            for child_name, child in owner.named_children():
                # A child GraphModule (known by its graph: graph_module imports this module).
                if child_name in attr_names and isinstance(getattr(child, "graph", None), Graph):
                    changed |= child.graph.eliminate_dead_code()
                    child.recompile()
        return changed

    def lint(self) -> None:
        """Check the graph's invariants; raise ``RuntimeError`` naming the first one broken.

        Every node belongs to this graph, its opcode is legal, its name is unique, its inputs are
        nodes of this graph defined before it; with an owning module, every ``get_attr`` and
        ``call_module`` target exists there (and ``call_module`` targets are modules).
        """
        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.op not in _legal_ops:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node not in self._find_nodes_lookup_table:
                raise RuntimeError(f"Node '{node}' is not added to the side table")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(
                        f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was used as an "
                        "argument! If you are copying nodes from another graph, make sure to use "
                        f"``arg_transform`` on node_copy() to remap values\n{self}"
                    )
                if arg not in seen_values:
                    raise RuntimeError(
                        f"Argument '{arg}' of Node '{node}' was used before it has been defined! Please check "
                        f"that Nodes in the graph are topologically ordered\n{self}"
                    )
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        if self.owning_module:
            for node in self.nodes:
                self._lint_target(node)

    def _lint_target(self, node: Node) -> None:
        from ember.nn import Module

        if node.op == "call_function":
            if not callable(node.target):
                raise ValueError(
                    f"Node {node} target {node.target} has type {type(node.target).__name__} but a Callable is expected"
                )
            return
        if not isinstance(node.target, str):
            raise ValueError(
                f"Node {node} target {node.target} has type {type(node.target).__name__} but a str is expected"
            )
        if node.op not in ("get_attr", "call_module"):
            return
        atoms = node.target.split(".")
        m_itr: Any = self.owning_module
        for i, atom in enumerate(atoms):
            new_m_itr = getattr(m_itr, atom, None)
            seen = ".".join(atoms[:i])
            if new_m_itr is None:
                raise RuntimeError(
                    f"Node {node} target {node.target} references nonexistent attribute {atom} of {seen}"
                )
            if node.op == "call_module" and not isinstance(new_m_itr, Module):
                raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen} does not reference an nn.Module")
            m_itr = new_m_itr

    # -- code and printing ---------------------------------------------------------------------

    def set_codegen(self, codegen: CodeGen) -> None:
        self._codegen = codegen

    def process_inputs(self, *args: Any) -> Any:
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out: Any) -> Any:
        return self._codegen.process_outputs(out)

    def on_generate_code(
        self, make_transformer: Callable[[TransformCodeFunc | None], TransformCodeFunc]
    ) -> contextlib.AbstractContextManager[None]:
        """Install a transformer of the generated body lines (given the current one, to chain).

        Takes effect at once; used as a context manager, restores the previous transformer on exit.
        """
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)

        @contextlib.contextmanager
        def restore() -> Iterator[None]:
            try:
                yield
            finally:
                self._codegen._body_transformer = previous

        return restore()

    def python_code(
        self,
        root_module: str,
        *,
        verbose: bool = False,
        include_stride: bool = False,
        include_device: bool = False,
        colored: bool = False,
        additional_meta: list[str] | None = None,
    ) -> PythonCode:
        """The source of ``forward`` and its globals; ``root_module`` names the module (``"self"``).

        ``verbose`` adds a comment with the user's line (``meta["stack_trace"]``) over each run of
        nodes and annotates values with their dtype and shape (``meta["val"]``), with strides and
        device on request; ``additional_meta`` names further meta keys to show in those comments.
        """
        # A namespace of its own for this code: node names and globals share it, so they never collide.
        namespace = _Namespace()
        saved = {node: node._repr_fn for node in self.nodes}

        def node_repr(n: Node) -> str:
            return namespace.create_name(n.name, n)

        for node in saved:
            node._repr_fn = node_repr
        try:
            return self._codegen._gen_python_code(
                self.nodes,
                root_module,
                namespace,
                verbose=verbose,
                include_stride=include_stride,
                include_device=include_device,
                colored=colored,
                additional_meta=additional_meta,
            )
        finally:
            for node, fn in saved.items():
                node._repr_fn = fn

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        maybe_return_typename: list[str] = [""]
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self) -> None:
        """Print the nodes as a plain table of ``opcode``, ``name``, ``target``, ``args``, ``kwargs``."""
        headers = ["opcode", "name", "target", "args", "kwargs"]
        rows = [[str(n.op), str(n.name), str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]

        def line(cells: list[str]) -> str:
            return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

        out = [line(headers), "  ".join("-" * w for w in widths)]
        out.extend(line(row) for row in rows)
        print("\n".join(out))


def _attr_exists(mod: Any, qualified_name: str) -> bool:
    from ember.core.tensor import Tensor
    from ember.nn import Module, Parameter

    module_path, _, name = qualified_name.rpartition(".")
    try:
        submod = mod.get_submodule(module_path)
    except AttributeError:
        warnings.warn(f"Failed to fetch module {module_path}!", stacklevel=3)
        return False
    if not hasattr(submod, name):
        return False
    res = getattr(submod, name)
    return isinstance(res, Module | Parameter) or name in submod._buffers or isinstance(res, Tensor)
