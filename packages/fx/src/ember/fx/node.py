"""``Node``: one operation of a ``Graph``, as in ``torch.fx``.

A node is a call site: ``op`` says what kind (``placeholder``, ``get_attr``, ``call_function``,
``call_method``, ``call_module``, ``output``), ``target`` what is called and ``args``/``kwargs`` with
what. Arguments that are other nodes are the graph's edges; each node keeps both directions of them
up to date on every assignment (``_input_nodes`` for its inputs in order, ``users`` for the nodes
that read it), so passes can walk def-use chains without a scan.

The nodes of a graph form a circular doubly linked list through a sentinel ``root`` node owned by
the graph; ``prepend``/``append`` move a node within that list.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, Union

from ember.core.dispatch import OpOverload, OpOverloadPacket
from ember.core.tensor import Tensor
from ember.fx._names import _dtype_abbr, _get_qualified_name, _shape, _type_repr
from ember.fx.immutable_collections import immutable_dict, immutable_list

if TYPE_CHECKING:
    from ember.fx.graph import Graph

__all__ = ["Argument", "Node", "Target", "has_side_effect", "map_aggregate", "map_arg"]

Target: TypeAlias = Callable[..., Any] | str

Argument: TypeAlias = (
    Union[
        tuple["Argument", ...],
        Sequence["Argument"],
        Mapping[str, "Argument"],
        slice,
        range,
        "Node",
        str,
        int,
        float,
        bool,
        complex,
    ]
    | None
)

_legal_ops = dict.fromkeys(["placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root"])

# Functions that dead-code elimination must keep although nothing reads their result.
_side_effectful_functions: set[Callable[..., Any]] = {operator.setitem}


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` as having side effects: ``eliminate_dead_code`` keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


def _format_arg(arg: object, max_list_len: float = float("inf")) -> str:
    """How ``format_node`` prints an argument: nodes as ``%name``, containers element by element."""
    if isinstance(arg, list | tuple):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        if isinstance(arg, list):
            return f"[{items}{more}]"
        return f"({items}{',' if len(arg) == 1 else ''}{more})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


# -- walking arguments -----------------------------------------------------------------------------


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a`` (through tuples, lists, dicts and slices), keeping structure.

    Lists and dicts come back as ``immutable_list``/``immutable_dict``; named tuples keep their type.
    """
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(elem, fn) for elem in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every ``Node`` in ``a``, keeping the structure of ``a``."""
    if not callable(fn):
        raise AssertionError("ember.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


# -- Node -----------------------------------------------------------------------------------------


class Node:
    """One operation in a ``Graph``; build nodes through the graph (``Graph.call_function``, ...)."""

    _args: tuple
    _kwargs: dict

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        target: Target,
        args: tuple[Argument, ...],
        kwargs: dict[str, Argument],
        return_type: Any | None = None,
    ) -> None:
        if op == "call_function":
            if not callable(target):
                raise ValueError(
                    f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                    f"{type(target).__name__} but a Callable is expected"
                )
        else:
            if op not in _legal_ops:
                raise AssertionError(f"op '{op}' is not in _legal_ops")
            if not isinstance(target, str):
                raise ValueError(
                    f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                    f"{type(target).__name__} but a str is expected"
                )
        self.graph = graph
        self._name = name
        self._op = op
        self._target = target
        self._indexed = False  # whether the graph's find_nodes table holds this node
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        # Orders nodes by their place in the graph (``a < b``), kept up to date as nodes move.
        self._sort_key: tuple[int, ...] = ()
        self._erased = False
        self._repr_fn: Callable[[Node], str] | None = None
        self.meta: dict[str, Any] = {}
        self._args = ()
        self._kwargs = {}
        self._update_args_kwargs(args, kwargs)

    @property
    def name(self) -> str:
        """The node's unique name in its graph, and its variable in the generated code."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        for hook in _replace_hooks(self):
            for user in self.users:
                hook(old=self, new=value, user=user)
        self._name = value

    @property
    def op(self) -> str:
        """The opcode: ``placeholder``, ``get_attr``, ``call_function``, ``call_method``, ``call_module``, ``output``."""
        return self._op

    @op.setter
    def op(self, value: str) -> None:
        self._reindex("_op", value)

    @property
    def target(self) -> Target:
        """What the node calls or reads: a callable for ``call_function``, a name (str) otherwise."""
        return self._target

    @target.setter
    def target(self, value: Target) -> None:
        self._reindex("_target", value)

    def _reindex(self, attr: str, value: Any) -> None:
        # find_nodes looks nodes up by (op, target): keep its table in step with them.
        if self._indexed:
            table = self.graph._find_nodes_lookup_table
            table.remove(self)
            setattr(self, attr, value)
            table.insert(self)
        else:
            setattr(self, attr, value)

    # -- the linked list ------------------------------------------------------------------------

    @property
    def next(self) -> Node:
        """The next node of the graph (the graph's root sentinel after the last)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The previous node of the graph (the graph's root sentinel before the first)."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move ``x`` (a node of the same graph) to just before this node."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x
        root = self.graph._root
        x._sort_key = _key_between(None if p is root else p._sort_key, None if self is root else self._sort_key)

    def append(self, x: Node) -> None:
        """Move ``x`` (a node of the same graph) to just after this node."""
        self._next.prepend(x)

    def __lt__(self, other: Node) -> bool:
        return self._sort_key < other._sort_key

    def __gt__(self, other: Node) -> bool:
        return self._sort_key > other._sort_key

    def __le__(self, other: Node) -> bool:
        return self == other or self < other

    def __ge__(self, other: Node) -> bool:
        return self == other or self > other

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # -- arguments ------------------------------------------------------------------------------

    @property
    def args(self) -> tuple[Argument, ...]:
        """The positional arguments; assigning them updates ``users`` of the nodes involved."""
        return self._args

    @args.setter
    def args(self, a: tuple[Argument, ...]) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Argument]:
        """The keyword arguments; assigning them updates ``users`` of the nodes involved."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict[str, Argument]) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes among ``args`` and ``kwargs``, each once, in order of first appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set ``self.args[idx] = arg``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        """Insert ``arg`` into the positional arguments before index ``idx``."""
        if not 0 <= idx <= len(self.args):
            raise AssertionError("insert_args index must be between 0 and len(self.args)")
        self.args = (*self.args[:idx], arg, *self.args[idx:])

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set ``self.kwargs[key] = arg``."""
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: tuple[Argument, ...], new_kwargs: dict[str, Argument]) -> None:
        new_inputs: dict[Node, None] = {}

        def collect(x: Argument) -> Argument:
            if isinstance(x, Node):
                new_inputs.setdefault(x)
            return x

        self._args = map_aggregate(new_args, collect)  # type: ignore[assignment]
        self._kwargs = map_aggregate(new_kwargs, collect)  # type: ignore[assignment]
        for old in self._input_nodes:
            if old not in new_inputs:
                old.users.pop(self, None)
        for new in new_inputs:
            new.users.setdefault(self)
        self._input_nodes = new_inputs

    def replace_all_uses_with(
        self,
        replace_with: Node,
        delete_user_cb: Callable[[Node], bool] | None = None,
        *,
        propagate_meta: bool = False,
    ) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead; returns the users changed.

        ``delete_user_cb(user)`` returning False leaves that user alone. ``propagate_meta`` copies
        this node's ``meta`` onto ``replace_with``, which must have none of its own.
        """
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError(
                    "Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                    "but replace_with already has .meta keys"
                )
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            changed.append(user)
            for hook in _replace_hooks(self):
                hook(old=self, new=replace_with.name, user=user)
            user._replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Replace every occurrence of ``old_input`` among this node's arguments with ``new_input``."""
        for hook in _replace_hooks(self):
            hook(old=old_input, new=new_input.name, user=self)
        self._replace_input_with(old_input, new_input)

    def _replace_input_with(self, old_input: Node, new_input: Node) -> None:
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n

        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))  # type: ignore[arg-type]

    # -- properties -----------------------------------------------------------------------------

    @property
    def stack_trace(self) -> str | None:
        """The Python stack recorded when the node was created (``meta["stack_trace"]``), if any."""
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node although nothing reads it.

        Placeholders and the output are; so are calls to functions marked ``has_side_effect``,
        ops whose schema writes to an argument (in-place and ``out=`` forms), ops tagged ``random``
        when ``impure_random``, and modules whose ``_is_impure`` attribute is true.
        """
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            module = self.graph.owning_module
            if module is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return bool(getattr(module.get_submodule(self.target), "_is_impure", False))  # type: ignore[arg-type]
        if self.op == "call_function":
            return _function_is_impure(self.target, impure_random)
        return False

    def normalized_arguments(
        self,
        root: Any,
        arg_types: tuple[Any] | None = None,
        kwarg_types: dict[str, Any] | None = None,
        normalize_to_only_use_kwargs: bool = False,
    ) -> Any:
        """PyTorch's argument normalization against a target's signature: not supported yet."""
        raise NotImplementedError("Node.normalized_arguments is not supported yet")

    def _rename(self, candidate: str) -> None:
        if candidate == self.name:
            return
        name = self.graph._graph_namespace.create_name(candidate, None)
        self.name = name
        self.graph._graph_namespace._rename_object(self, name)

    # -- printing -------------------------------------------------------------------------------

    def __repr__(self) -> str:
        if self._repr_fn is not None:
            return self._repr_fn(self)
        return self.name

    @staticmethod
    def _pretty_print_target(target: object) -> str:
        if isinstance(target, str):
            return target
        if isinstance(target, OpOverload | OpOverloadPacket):
            return _get_qualified_name(target)
        module = getattr(target, "__module__", None)
        if module == "builtins":
            return f"builtins.{target.__name__}"  # type: ignore[attr-defined]
        if module == "_operator":
            return f"operator.{target.__name__}"  # type: ignore[attr-defined]
        return _get_qualified_name(target)

    def format_node(
        self,
        placeholder_names: list[str] | None = None,
        maybe_return_typename: list[str] | None = None,
        *,
        include_tensor_metadata: bool = False,
    ) -> str | None:
        """A one-line description, the form ``str(graph)`` prints.

        ``placeholder_names`` and ``maybe_return_typename`` collect the signature for ``Graph.__str__``;
        with ``placeholder_names`` given, a placeholder adds itself there and returns None.
        ``include_tensor_metadata`` describes a call's tensor value (``meta["val"]``) by dtype,
        shape, strides and device instead of by ``type``.
        """
        users = f"[num_users={len(self.users)}]"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        if self.op == "placeholder":
            arg_str = self.target
            if self.type:
                arg_str += arg_str + f": {_type_repr(self.type)}"  # PyTorch repeats the name here
            if placeholder_names:
                placeholder_names.append(arg_str)  # type: ignore[arg-type]
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {typename}{users} = {self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : {typename}{users} = {self.op}[target={self._pretty_print_target(self.target)}]"
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        if include_tensor_metadata:
            typename = _tensor_metadata(self.meta) or typename
        return (
            f"%{self.name} : {typename}{users} = {self.op}[target={self._pretty_print_target(self.target)}]("
            f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"
        )


def _replace_hooks(node: Node) -> list[Callable]:
    return getattr(node.graph.owning_module, "_replace_hooks", None) or []


def _tensor_metadata(meta: dict[str, Any]) -> str | None:
    val = meta.get("val", meta.get("tensor_meta", meta.get("example_value")))
    if not isinstance(val, Tensor):
        return None
    # No space before the users count: PyTorch prints it so.
    return f'Tensor "{_dtype_abbr(val.dtype)}{_shape(val.shape)}{_shape(val.stride())}{val.device}"'


def _key_between(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> tuple[int, ...]:
    """A sort key strictly between ``a`` and ``b`` (None: the start or the end of the graph)."""
    if b is None:
        return (a[0] + 1,) if a else (0,)
    if a is None:
        return (b[0] - 1,)
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    if i == len(a):
        # ``a`` is a prefix of ``b``: extend ``a`` with a number just below ``b``'s next one.
        return (*a, b[i] - 1)
    if b[i] - a[i] > 1:
        return (*a[:i], a[i] + 1)
    return (*a, 0)


def _function_is_impure(target: Any, impure_random: bool) -> bool:
    if target in _side_effectful_functions:
        return True
    if isinstance(target, OpOverload):
        if target.schema.is_mutable:
            return True
        return impure_random and "random" in target.tags
    return False
