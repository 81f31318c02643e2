"""``Interpreter`` runs a graph node by node; ``Transformer`` reruns it to build a new graph.

An interpreter has one method per opcode (``placeholder``, ``get_attr``, ``call_function``,
``call_method``, ``call_module``, ``output``); ``run_node`` fetches a node's argument values and calls
the method of its opcode. Subclasses override those methods to change what the graph means (swap
functions, record values, propagate shapes) without touching the graph. With
``garbage_collect_values`` a value is dropped from ``env`` after its last use, as the generated code
does.

``Transformer`` is the interpreter whose values are ``Proxy`` objects of a new graph: each method
records the node it would have run, so ``transform()`` returns a new ``GraphModule`` (a copy,
unless a subclass overrides some methods to emit something else).
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Iterator
from typing import Any

from ember.fx._symbolic_trace import Tracer
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Argument, Node, Target, map_aggregate, map_arg
from ember.fx.proxy import Proxy
from ember.nn import Module

__all__ = ["Interpreter", "Transformer"]

log = logging.getLogger(__name__)


class Interpreter:
    """Runs ``module``'s graph (or ``graph``, reading state from ``module``) one node at a time."""

    def __init__(self, module: Module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph: Graph = graph if graph is not None else module.graph  # type: ignore[assignment]
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            # Walking backwards, the first use seen of a value is its last use.
            seen: set[Node] = set()
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(self.graph.nodes):
                for inp in node._input_nodes:
                    if inp not in seen:
                        seen.add(inp)
                        self.user_to_last_uses.setdefault(node, []).append(inp)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``; ``initial_env`` gives values for nodes that are then not run."""
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else msg
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    e.args = (msg, *e.args[1:])
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                output_val = self.env[node]
                return self.graph.process_outputs(output_val) if enable_io_processing else output_val
        return None

    def boxed_run(self, args_list: list[Any]) -> Any:
        """Run with the arguments in a list, which is cleared so that the inputs can be freed early."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = "extra arguments" if len(args_list) > len(placeholders) else "missing arguments"
            raise RuntimeError(
                f"Interpreter.boxed_run expected {len(placeholders)} arguments for placeholders "
                f"but received {len(args_list)} ({detail})"
            )
        env = dict(zip(placeholders, args_list, strict=True))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its argument values, then call the method named by its opcode."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug("run_node %s", n.format_node())
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per opcode ------------------------------------------------------------------

    def placeholder(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        """The next argument passed to ``run`` (all the rest for ``*args``), else the default."""
        assert isinstance(target, str)
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if args:
                return args[0]
            raise RuntimeError(
                f"Expected positional argument for parameter {target}, but one was not passed in!"
            ) from si

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        assert isinstance(target, str)
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        assert not isinstance(target, str)
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        self_obj, *args_tail = args
        assert isinstance(target, str)
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        assert isinstance(target, str)
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        return args[0]

    # -- helpers --------------------------------------------------------------------------------

    def fetch_attr(self, target: str) -> Any:
        """The attribute at the dotted path ``target`` of ``self.module``."""
        atoms = target.split(".")
        attr_itr: Any = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[: i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``n``'s args and kwargs with each node replaced by its value in ``env``."""
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        assert isinstance(args, tuple) and isinstance(kwargs, dict)
        return args, kwargs

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """``args`` with each node replaced by its value in ``env``."""

        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(
                    f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() to diagnose such issues"
                )
            return self.env[n_arg]

        return map_arg(args, load_arg)


# The metadata a new node takes from the node being transformed (PyTorch's preserve_node_meta),
# less ``from_node`` provenance, which ember does not record.
_COPY_META_FIELDS = (
    "nn_module_stack",
    "torch_fn",
    "source_fn_stack",
    "original_aten",
    "recompute",
    "ac_graph_id",
    "has_backward_hook",
    "quantization_tag",
    "_numeric_debug_handle",
    "custom",
    "partitioner_tag",
)


class _TransformerTracer(Tracer):
    """Appends to the new graph; every module call stays a ``call_module`` node."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs: dict = {}
        self.current_meta: dict[str, Any] | None = None

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        return True

    def create_node(self, *args: Any, **kwargs: Any) -> Node:
        node = super().create_node(*args, **kwargs)
        meta = self.current_meta
        if meta:
            if meta.get("stack_trace"):
                node.stack_trace = meta["stack_trace"]
            for field in _COPY_META_FIELDS:
                if field in meta:
                    node.meta[field] = copy.copy(meta[field])
        return node


class Transformer(Interpreter):
    """Runs a graph on ``Proxy`` values to build a new one; ``transform()`` returns the new ``GraphModule``.

    Each opcode method records the node it would have run, so the result is a copy unless a
    subclass overrides a method to emit something else (``super().call_function(other, args,
    kwargs)``, or any traceable code on the proxies it is given).
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def run_node(self, n: Node) -> Any:
        saved, self.tracer.current_meta = self.tracer.current_meta, n.meta
        try:
            return super().run_node(n)
        finally:
            self.tracer.current_meta = saved

    def placeholder(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        assert isinstance(target, str)
        default_value = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default_value), self.tracer)

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        assert isinstance(target, str)
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        assert isinstance(target, str)
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Build the new graph and return it as a ``GraphModule`` over ``self.module``'s state."""
        result = super().run(enable_io_processing=False)
        if result is not None:
            new_output = self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
            old_output = self.graph.output_node()
            new_output.meta.update(old_output.meta)
        return GraphModule(self.module, self.new_graph)
