"""Proxies: the values that flow through a program while it is symbolically traced.

A :class:`Proxy` wraps a graph :class:`~ember.fx.node.Node`. Every Python operator applied to a
proxy (``+``, ``@``, ``[]``, ``<``, unary ``-``...) records a ``call_function`` node whose target is
the matching function of the :mod:`operator` module; reading an attribute gives an
:class:`Attribute`, which becomes a ``call_method`` node when it is called (``x.view(2, 3)``) and a
``getattr`` ``call_function`` node when it is used as a value (``x.shape``). A :class:`TracerBase`
owns the graph and decides how Python values become node arguments (:meth:`TracerBase.create_arg`)
and what happens when a proxy meets control flow (:meth:`TracerBase.to_bool`,
:meth:`TracerBase.iter`): by default, a :class:`TraceError` that names the user's line.

How ``ember.relu(proxy)`` is recorded is the business of the tracer, which patches ember's function
namespaces while a trace runs (see :mod:`ember.fx._symbolic_trace`).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import dis
import enum
import functools
import inspect
import logging
import operator
import traceback
import types
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

from ember.core.devices import device
from ember.core.dispatch import OpOverload, OpOverloadPacket
from ember.core.dtypes import dtype
from ember.core.tensor import Tensor
from ember.fx.graph import Graph
from ember.fx.node import Argument, Node, Target, map_aggregate

__all__ = [
    "Attribute",
    "GraphAppendingTracer",
    "ParameterProxy",
    "Proxy",
    "Scope",
    "ScopeContextManager",
    "TraceError",
    "TracerBase",
]

log = logging.getLogger(__name__)

# Values a node argument holds as they are (PyTorch's node.base_types).
base_types: tuple[type, ...] = (str, int, float, bool, complex, dtype, Tensor, device, OpOverload, OpOverloadPacket)

# Source files whose frames are the tracer's own: user-facing locations (stack traces, errors) skip
# them. Other fx modules register theirs with `_register_internal_file`.
_INTERNAL_FILES: set[str] = {__file__}


def _register_internal_file(filename: str) -> None:
    _INTERNAL_FILES.add(filename)


def _is_internal_frame(filename: str) -> bool:
    return filename in _INTERNAL_FILES


class TraceError(ValueError):
    """A symbolically traced value was used in a way that tracing cannot record (control flow)."""


class _TraceTypeError(TraceError, TypeError):
    # A proxy used where Python needs an int (`range(p)`, `t[:p]`): PyTorch raises TypeError here,
    # and we say why; catching either type works.
    pass


class _TraceRuntimeError(TraceError, RuntimeError):
    # `len(proxy)`: PyTorch raises RuntimeError; catching either type works.
    pass


def _user_frame() -> types.FrameType | None:
    """The innermost frame that is not the tracer's own: the user code that touched the proxy."""
    frame = inspect.currentframe()
    while frame is not None and _is_internal_frame(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _where(frame: types.FrameType | None) -> str:
    """``File "...", line N, in fn`` and the source line of ``frame``, as tracebacks print them."""
    if frame is None:
        return ""
    summary = traceback.FrameSummary(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    text = f'File "{summary.filename}", line {summary.lineno}, in {summary.name}'
    if summary.line:
        text += f"\n    {summary.line}"
    return text


def _with_location(message: str) -> str:
    where = _where(_user_frame())
    return f"{message}\n  {where}" if where else message


class Scope:
    """The module path and module type of the module whose ``forward`` is being traced."""

    def __init__(self, module_path: str, module_type: Any) -> None:
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    """Sets a :class:`Scope` to the scope of the module being entered, and restores it on exit."""

    def __init__(self, scope: Scope, current_scope: Scope) -> None:
        self._prev_scope = copy.copy(scope)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self) -> Scope:
        return self._scope

    def __exit__(self, *args: object) -> None:
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


class TracerBase:
    """Records nodes into ``self.graph``; subclasses decide how values and control flow are handled."""

    graph: Graph
    # Record the user's frames in each node's meta["stack_trace"].
    record_stack_traces: bool = False
    # Proxy reads of buffers (not only parameters) as get_attr nodes.
    proxy_buffer_attributes: bool = False
    # Record `assert proxy` as a call of assert_fn instead of raising TraceError.
    trace_asserts: bool = False
    # Check calls of ops with mutable schemas (not supported yet: raises when set).
    check_mutable_operations: bool = False
    # The method of a root module that is traced.
    traced_func_name: str = "forward"
    scope: Scope
    module_stack: collections.OrderedDict[str, tuple[str, Any]]
    node_name_to_scope: dict[str, tuple[str, type]]

    def create_node(
        self,
        kind: str,
        target: Target,
        args: tuple[Argument, ...],
        kwargs: dict[str, Argument],
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Insert a node into the graph; override to check or rewrite what is recorded."""
        if kind == "call_function" and self.check_mutable_operations:
            raise NotImplementedError("TracerBase.check_mutable_operations is not supported yet")
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        self.node_name_to_scope[node.name] = (self.scope.module_path, self.scope.module_type)
        if self.module_stack:
            node.meta["nn_module_stack"] = copy.copy(self.module_stack)
        if self.record_stack_traces and "stack_trace" not in node.meta:
            stack_trace = self._user_stack_trace()
            if stack_trace:
                node.meta["stack_trace"] = stack_trace
        return node

    def _user_stack_trace(self) -> str:
        """The user's frames from the outermost ``forward`` in, without the tracer's and nn's call plumbing.

        Formatted as PyTorch's ``node.stack_trace``: ``File "...", line N, in fn\\n    code`` per frame.
        Without a ``forward`` frame (a traced free function) the trace is empty, as in PyTorch.
        """
        frames = traceback.extract_stack()
        for i, frame in enumerate(frames):
            if frame.name == "forward":
                frames = frames[i:]
                break
        else:
            return ""
        user = traceback.StackSummary.from_list(
            [f for f in frames if not _is_internal_frame(f.filename) and f.filename not in _plumbing_files()]
        )
        return "".join(user.format()).strip()

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(
        self,
        kind: str,
        target: Target,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str | None = None,
        type_expr: Any | None = None,
        proxy_factory_fn: Callable[[Node], Proxy] | None = None,
    ) -> Proxy:
        """Lower ``args``/``kwargs`` with :meth:`create_arg`, record a node, and wrap it in a proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        if not isinstance(args_, tuple):
            raise AssertionError(f"create_arg turned the args tuple into {type(args_)}")
        if not isinstance(kwargs_, dict):
            raise AssertionError(f"create_arg turned the kwargs dict into {type(kwargs_)}")
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def _find_user_frame(self) -> types.FrameType | None:
        return _user_frame()

    def create_arg(self, a: Any) -> Argument:
        """Lower a value seen during tracing into an argument a node can hold.

        Proxies become their nodes; tuples, lists, dicts, slices and ranges are lowered element by
        element; numbers, strings, dtypes, devices, ops, enums, ``None`` and ``...`` stay as they
        are; a dataclass becomes a ``call_function`` node of its class. Anything else raises
        ``NotImplementedError``; override to accept more types.
        """
        handler = _create_arg_bypass.get(type(a))
        if handler is not None:
            return handler(self, a)
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            elems = [self.create_arg(elem) for elem in a]
            return type(a)(*elems) if hasattr(a, "_fields") else type(a)(elems)
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            return _create_arg_dict(self, a)
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, (OpOverload, OpOverloadPacket)):
            return a
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            kwargs = {field.name: self.create_arg(getattr(a, field.name)) for field in dataclasses.fields(a)}
            return self.create_node("call_function", a.__class__, (), kwargs)
        if isinstance(a, (*base_types, enum.Enum)) or a is None or a is ...:
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """Called when a proxy is converted to ``bool`` (``if``, ``while``, ``and``...).

        A proxy has no value, so by default this raises :class:`TraceError` naming the user's line.
        A tracer that knows more can override it and return a value.
        """
        raise TraceError(_with_location("symbolically traced variables cannot be used as inputs to control flow"))

    def iter(self, obj: Proxy) -> Iterator:
        """Called when a proxy is iterated (a ``for`` loop, ``*args``); raises :class:`TraceError` by default."""
        raise TraceError(
            _with_location(
                "Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop or as "
                "a *args or **kwargs function argument. See the ember.fx docs for the control flow that can be "
                "traced, and the Proxy docstring for help with Proxy iteration errors"
            )
        )

    def keys(self, obj: Proxy) -> Proxy:
        """Called for ``obj.keys()`` (what ``**obj`` does): records a ``keys`` method call."""
        return Attribute(obj, "keys")()


@functools.cache
def _plumbing_files() -> frozenset[str]:
    # Frames of Module.__call__ sit between a module's caller and its forward; PyTorch's stack
    # traces show them, but they say nothing about the user's program.
    from ember.nn.modules import module as nn_module

    return frozenset({nn_module.__file__})


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph: what ``Proxy(node)`` uses outside of a trace."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


def assert_fn(x: Any) -> None:
    """What ``assert proxy`` records with ``TracerBase.trace_asserts``."""
    if not x:
        raise AssertionError("Assertion failed")


def _in_assert(frame: types.FrameType | None) -> bool:
    """Whether the caller of ``frame`` is testing the condition of an ``assert`` statement: a jump
    if true over ``LOAD_ASSERTION_ERROR``, at the current instruction or right after it (Python
    3.13 converts to bool in ``TO_BOOL`` or in ``COMPARE_OP`` before the jump)."""
    calling = frame.f_back if frame is not None else None
    if calling is None:
        return False
    instructions = list(dis.get_instructions(calling.f_code))
    index = bisect_left(instructions, calling.f_lasti, key=lambda inst: inst.offset)
    for at in (index, index + 1):
        if at + 1 < len(instructions):
            jump, after = instructions[at], instructions[at + 1]
            if "JUMP" in jump.opname and "IF_TRUE" in jump.opname and after.opname == "LOAD_ASSERTION_ERROR":
                return True
    return False


class Proxy:
    """A graph node standing in for a value while a program is symbolically traced.

    Operators, attribute reads, method calls and calls of ember functions on a proxy add nodes to
    the tracer's graph instead of computing. A proxy has no value, so it cannot decide control flow
    (``if proxy:``, ``for v in proxy:``); either make the function that needs the value a leaf with
    :func:`ember.fx.wrap`, or specialize the value with ``concrete_args``. Unpacking a proxy into a
    fixed number of names (``b, t, c = x.size()``) works: it records one ``getitem`` per name.

    ``Proxy(node)`` on a node of an existing graph gives a proxy that appends to that graph.
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        # Not recorded yet: most attributes are methods about to be called (see Attribute).
        return Attribute(self, k)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict[int, Any]) -> Proxy:
        # Defined so that deepcopy does not look it up through __getattr__ and record a node.
        new_dict = {}
        for k, v in self.__dict__.items():
            try:
                new_dict[k] = copy.deepcopy(v, memo)
            except Exception:
                log.warning("Shallow copy %s of Proxy because it cannot be deepcopied", k)
                new_dict[k] = copy.copy(v)
        new = Proxy(new_dict["node"], new_dict["tracer"])
        new.__dict__.update(new_dict)
        return new

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # `a, b = proxy` compiles to UNPACK_SEQUENCE n, which calls iter(): the count is in the
        # bytecode, so record n getitems. Any other iteration has no known length.
        frame = inspect.currentframe()
        calling = frame.f_back if frame is not None else None
        if calling is not None:
            instructions = list(dis.get_instructions(calling.f_code))
            index = bisect_left(instructions, calling.f_lasti, key=lambda inst: inst.offset)
            if index < len(instructions) and instructions[index].opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(instructions[index].argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        if self.tracer.trace_asserts and _in_assert(inspect.currentframe()):
            self.tracer.create_proxy("call_function", assert_fn, (self,), {})
            return True
        return self.tracer.to_bool(self)

    def __index__(self) -> int:
        raise _TraceTypeError(
            _with_location(
                "symbolically traced variables cannot be used where Python needs an int (range(), slicing a "
                "tensor, list indexing); use ember.fx.wrap on the function that needs the value, or concrete_args"
            )
        )

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise _TraceRuntimeError(
            _with_location(
                "'len' is not supported in symbolic tracing by default. If you want this call to be recorded, "
                "please call ember.fx.wrap('len') at module scope"
            )
        )


class Attribute(Proxy):
    """``proxy.name``: a ``call_method`` node when called, else a ``getattr`` node on first use."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class ParameterProxy(Proxy):
    """The proxy of a module parameter: ``shape``, ``size()``, ``dim()``, ``ndim``, ``numel()`` and
    ``nelement()`` answer from the parameter itself, so that code may branch on them."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        from ember.nn.parameter import Parameter

        if not isinstance(param, Parameter):
            raise AssertionError(f"Expected Parameter, got {type(param)}")
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> Any:
        return self.param.shape

    def size(self, *dim: int) -> Any:
        return self.param.size(*dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


# Operators recorded as call_function of the operator module's function of the same name.
_MAGIC_METHODS = ("eq", "ne", "lt", "gt", "le", "ge", "pos", "neg", "invert", "abs", "getitem")
_REFLECTABLE_MAGIC_METHODS = (
    "add",
    "sub",
    "mul",
    "floordiv",
    "truediv",
    "mod",
    "pow",
    "lshift",
    "rshift",
    "and_",
    "or_",
    "xor",
    "matmul",
)


def _define_magic(name: str) -> None:
    target = getattr(operator, name)

    def impl(*args: Any, **kwargs: Any) -> Proxy:
        return args[0].tracer.create_proxy("call_function", target, args, kwargs)

    dunder = f"__{name.strip('_')}__"
    impl.__name__ = impl.__qualname__ = dunder
    # Set after the class body, so that defining __eq__ does not take away Proxy's __hash__.
    setattr(Proxy, dunder, impl)


def _define_reflected(name: str) -> None:
    target = getattr(operator, name)

    def impl(self: Proxy, lhs: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", target, (lhs, self), {})

    dunder = f"__r{name.strip('_')}__"
    impl.__name__ = impl.__qualname__ = dunder
    setattr(Proxy, dunder, impl)


for _name in (*_MAGIC_METHODS, *_REFLECTABLE_MAGIC_METHODS):
    _define_magic(_name)
for _name in _REFLECTABLE_MAGIC_METHODS:
    _define_reflected(_name)


def _no_nodes_error(arg: Argument) -> None:
    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {arg}")


def _create_arg_dict(tracer: TracerBase, a: dict[Any, Any]) -> dict[Any, Argument]:
    out: dict[Any, Argument] = {}
    for k, v in a.items():
        if not isinstance(k, str):
            k = tracer.create_arg(k)
            map_aggregate(k, lambda x: _no_nodes_error(x) if isinstance(x, Node) else x)
        out[k] = tracer.create_arg(v)
    return out


def _keep(tracer: TracerBase, a: Any) -> Any:
    return a


# Exact types with a known lowering, looked up before the isinstance chain (most arguments are these).
_create_arg_bypass: dict[type, Callable[[TracerBase, Any], Any]] = {
    **{t: _keep for t in (*base_types, type(None), type(...), OpOverload)},
    Proxy: lambda tracer, a: a.node,
    tuple: lambda tracer, a: tuple(tracer.create_arg(elem) for elem in a),
    list: lambda tracer, a: [tracer.create_arg(elem) for elem in a],
    dict: _create_arg_dict,
}
