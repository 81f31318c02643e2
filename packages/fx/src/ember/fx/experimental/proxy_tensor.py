"""``make_fx``: a graph of ops traced through the dispatcher.

``make_fx(f)(*args)`` runs ``f`` once under a dispatch mode that records every op reaching the
dispatcher's ``python`` level as a ``call_function`` node whose target is the op itself
(``ember.ops.aten.mm.default``). Because the mode sits below autograd, autocast and the
composite decompositions, what it sees is what a backend would run: the forward ops, and the
backward ops too when ``f`` calls ``backward`` or ``ember.autograd.grad``; views, in-place ops, random
ops, custom ops and ``autograd.Function`` all arrive as ops.

The values ``f`` computes with are, by ``tracing_mode``:

- ``"real"``: the real inputs, so the trace costs what running ``f`` costs;
- ``"fake"``: fake tensors (``ember._subclasses.fake_tensor``): shapes, dtypes and devices, no data;
- ``"symbolic"``: fake tensors whose sizes are symbols of a ``ShapeEnv``, so the graph holds for
  every size the recorded guards admit. A size that ``f`` computes with (``x.shape[0] * 2``) becomes
  nodes of its own: ``sym_size`` of an input and the arithmetic on it.

Each traced tensor is mapped to the node that made it (an in-place op remaps its output, which is
its input); a tensor the trace did not make or receive is a constant of the graph (``get_attr``
of ``_tensor_constant0``...). Every node gets ``meta["val"]``, a fake tensor (or a SymInt) standing
for its value, and ``meta["stack_trace"]``, the user's frames that led to it.
"""

from __future__ import annotations

import contextlib
import operator
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from ember.autograd import no_grad
from ember.autograd.recording import TensorMeta
from ember.core import ops as _ops
from ember.core.dispatch import DispatchMode, OpOverload
from ember.core.generator import Generator
from ember.core.symbolic import SymBool, SymFloat, SymInt, sym_int
from ember.core.tensor import Tensor
from ember.fx._logging import log_traced
from ember.fx._trace_pytree import _PyTreeCodeGen, _PyTreeInfo
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node
from ember.utils import _pytree as pytree
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["ProxyTorchDispatchMode", "get_isolated_graphmodule", "make_fx"]

_SYMBOLIC = (SymInt, SymFloat, SymBool)
TRACING_MODES = ("real", "fake", "symbolic")


class _Trace:
    """The graph being built and what each traced value maps to."""

    def __init__(self, record_stack_traces: bool) -> None:
        self.graph = Graph()
        self.root: dict[str, Any] = {}
        self.attributes: dict[str, Node] = {}
        # id(tensor) -> (tensor, node); the tensor is kept so that its id is not reused mid-trace.
        self.tensors: dict[int, tuple[Tensor, Node]] = {}
        # The same value seen through another Tensor object (autograd saves its own alias of an
        # output): the view's storage, offset, sizes, strides and dtype -> (storage version, node).
        self.aliases: dict[tuple, tuple[int, Node]] = {}
        # A size symbol -> (the input node, what of it, dim, its SymInt) for sym_size nodes made on use.
        self.symbol_sources: dict[Any, tuple[Node, str, int | None, Any]] = {}
        self.symbol_nodes: dict[Any, Node] = {}
        self.record_stack_traces = record_stack_traces

    # -- values to nodes ------------------------------------------------------------------------

    def track(self, value: Any, node: Node) -> None:
        """Map every tensor of ``value`` (the output of ``node``) to its node."""
        if isinstance(value, Tensor):
            self.tensors[id(value)] = (value, node)
            self.aliases[_alias_key(value)] = (value._storage.version, node)
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                if isinstance(v, Tensor | list | tuple):
                    item = self.graph.create_node("call_function", operator.getitem, (node, i), {})
                    item.meta["val"] = _meta_val(v)
                    self.track(v, item)

    def node_of(self, value: Any) -> Any:
        """The graph argument standing for ``value``: its node, or ``value`` itself if constant."""
        if isinstance(value, Tensor):
            found = self.tensors.get(id(value))
            if found is not None:
                return found[1]
            alias = self.aliases.get(_alias_key(value))
            if alias is not None and alias[0] == value._storage.version:
                return alias[1]
            return self._constant(value)
        if isinstance(value, _SYMBOLIC):
            return self._symbolic(value)
        if isinstance(value, Generator):
            return self._attribute("_generator", value)
        if isinstance(value, TensorMeta):
            return self._tensor_meta(value)
        if type(value) not in _PLAIN and not isinstance(value, _PLAIN_KINDS):
            raise TypeError(
                f"make_fx: an argument of type {type(value).__name__} ({value!r}) cannot be held by a graph; "
                "an op was called with it"
            )
        return value

    def _tensor_meta(self, meta: TensorMeta) -> Node:
        """A derivative formula that reads only a tensor's metadata gets a ``TensorMeta``; in the graph
        it becomes an uninitialized tensor with that metadata, which is all the op reads of it."""
        args = (tuple(self.args_of(tuple(meta._shape))), tuple(self.args_of(tuple(meta._stride))))
        kwargs = {"dtype": meta.dtype, "device": meta.device}
        node = self.graph.create_node("call_function", _ops.aten.empty_strided.default, args, kwargs)
        from ember._subclasses.fake_impls import fresh_fake

        fake_mode = _snapshot_mode_for_metadata()
        node.meta["val"] = fresh_fake(fake_mode, meta._shape, meta.dtype, meta.device, meta._stride)
        return node

    def args_of(self, tree: Any) -> Any:
        return pytree.tree_map(self.node_of, tree)

    def _constant(self, tensor: Tensor) -> Node:
        node = self._attribute("_tensor_constant", tensor)
        node.meta["val"] = _meta_val(tensor)
        self.tensors[id(tensor)] = (tensor, node)
        return node

    def _attribute(self, prefix: str, value: Any) -> Node:
        """A ``get_attr`` node for a value the graph holds (a constant tensor, a generator)."""
        for name, held in self.root.items():
            if held is value and name.startswith(prefix):
                return self.attributes[name]
        name = f"{prefix}{sum(k.startswith(prefix) for k in self.root)}"
        self.root[name] = value
        node = self.attributes[name] = self.graph.create_node("get_attr", name, (), {}, name=name)
        return node

    def _symbolic(self, value: Any) -> Any:
        """The nodes computing a SymInt's expression from the inputs' sizes; a constant if it has none."""
        expr = value.node.expr
        if not getattr(expr, "free_symbols", None):
            return value.node.hint if hasattr(value.node, "hint") else int(value)
        node = _SymbolicExpression(self).emit(expr, type(value))
        if isinstance(node, Node) and "val" not in node.meta:
            node.meta["val"] = value
        return node


# Arguments a graph holds as written: what the code generator prints as Python literals.
_PLAIN = frozenset({int, float, bool, str, complex, type(None), type(...), slice})
_PLAIN_KINDS: tuple = ()


def _plain_kinds() -> tuple:
    import enum

    from ember.core.devices import device
    from ember.core.dtypes import dtype
    from ember.core.memory_formats import memory_format

    return (dtype, device, memory_format, enum.Enum, list, tuple, dict)


def _alias_key(t: Tensor) -> tuple:
    return (id(t._storage), _hashable(t._offset), _hashable(t._shape), _hashable(t._stride), t.dtype)


def _hashable(value: Any) -> Any:
    """Sizes as dictionary keys: a SymInt hashes by its expression."""
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value) if any(isinstance(v, SymInt) for v in value) else value
    return value.node.expr if isinstance(value, SymInt) else value


class _SymbolicExpression:
    """Writes a sympy expression over size symbols as nodes (sym_size of inputs, then arithmetic)."""

    def __init__(self, trace: _Trace) -> None:
        self.trace = trace

    def emit(self, expr: Any, pytype: type) -> Any:
        import sympy

        trace = self.trace
        if expr in trace.symbol_nodes:
            return trace.symbol_nodes[expr]
        if isinstance(expr, sympy.Symbol):
            source = trace.symbol_sources.get(expr)
            if source is None:
                raise RuntimeError(f"make_fx: the symbol {expr} comes from no input; it cannot be written in the graph")
            node, what, dim, value = source
            op = {"size": _ops.aten.sym_size.int, "stride": _ops.aten.sym_stride.int}.get(what)
            if op is not None:
                made = trace.graph.create_node("call_function", op, (node, dim), {}, name=f"sym_{what}_int")
            else:
                made = trace.graph.create_node(
                    "call_function", _ops.aten.sym_storage_offset.default, (node,), {}, name="sym_storage_offset"
                )
            made.meta["val"] = value
            trace.symbol_nodes[expr] = made
            return made
        if expr.is_Integer:
            return int(expr)
        if expr.is_Number:
            return float(expr)
        if expr.is_Add or expr.is_Mul:
            fold = operator.add if expr.is_Add else operator.mul
            terms = sorted(expr.args, key=lambda a: (a.is_Number, str(a)))
            result = self.emit(terms[0], pytype)
            for term in terms[1:]:
                result = self._call(fold, result, self.emit(term, pytype))
        elif expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
            result = self._call(operator.pow, self.emit(expr.base, pytype), int(expr.exp))
        else:
            name = type(expr).__name__
            binary = {"FloorDiv": operator.floordiv, "Mod": operator.mod, "PythonMod": operator.mod}
            if name in binary:
                result = self._call(binary[name], *(self.emit(a, pytype) for a in expr.args))
            elif name == "TruncToInt":
                result = self._call(sym_int, self.emit(expr.args[0], pytype))
            elif name in ("Max", "Min"):
                fn = max if name == "Max" else min
                args = [self.emit(a, pytype) for a in expr.args]
                result = args[0]
                for a in args[1:]:
                    result = self._call(fn, result, a)
            else:
                raise RuntimeError(f"make_fx: cannot write the size expression {expr} as graph nodes")
        trace.symbol_nodes[expr] = result
        return result

    def _call(self, fn: Callable, *args: Any) -> Node:
        return self.trace.graph.create_node("call_function", fn, args, {})


def _meta_val(value: Any) -> Any:
    """What ``meta["val"]`` holds for a traced value: a fake stand-in of a tensor, else the value."""
    from ember._subclasses.fake_tensor import FakeTensor

    if isinstance(value, FakeTensor) or not isinstance(value, Tensor):
        return value
    return _snapshot(value)


def _snapshot_mode_for_metadata() -> Any:
    from ember._subclasses.fake_tensor import FakeTensorMode

    global _snapshot_mode
    if _snapshot_mode is None:
        _snapshot_mode = FakeTensorMode(allow_non_fake_inputs=True)
    return _snapshot_mode


def _snapshot(tensor: Tensor) -> Any:
    """A fake tensor with ``tensor``'s metadata as it is now (a real tensor may be resized later)."""
    from ember._subclasses.fake_impls import fresh_fake
    from ember._subclasses.fake_tensor import FakeTensorMode

    global _snapshot_mode
    if _snapshot_mode is None:
        _snapshot_mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = fresh_fake(_snapshot_mode, tensor._shape, tensor.dtype, tensor.device, tensor._stride)
    fake.requires_grad = tensor.requires_grad
    return fake


_snapshot_mode = None

# Frames of these files are the machinery, not the user's program.
_OWN_PREFIXES: tuple[str, ...] = ()


def _machinery_prefixes() -> tuple[str, ...]:
    global _OWN_PREFIXES
    if not _OWN_PREFIXES:
        import ember.core
        import ember.fx

        roots = []
        for package in (ember.core, ember.fx):
            for path in package.__path__:
                roots.append(str(path).rsplit("/", 1)[0])
        import ember.autograd

        roots.extend(str(p).rsplit("/", 1)[0] for p in ember.autograd.__path__)
        _OWN_PREFIXES = tuple(sorted(set(roots)))
    return _OWN_PREFIXES


def _user_stack() -> str | None:
    """The user's frames of the current call stack, in traceback's format, innermost last."""
    prefixes = _machinery_prefixes()
    frames = []
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(prefixes) and not filename.startswith("<"):
            frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    if not frames:
        return None
    summary = traceback.StackSummary.extract(reversed(frames[:8]), lookup_lines=True)
    return "".join(summary.format()).rstrip("\n")


class ProxyTorchDispatchMode(DispatchMode):
    """The mode that records each op call it sees as a node of ``trace.graph``."""

    def __init__(self, trace: _Trace, tracing_mode: str, decomposition_table: dict | None = None) -> None:
        self.trace = trace
        self.tracing_mode = tracing_mode
        self.decomposition_table = decomposition_table or {}

    def __ember_dispatch__(self, func: OpOverload, types: tuple, args: tuple, kwargs: dict) -> Any:
        decomposition = self.decomposition_table.get(func)
        if decomposition is not None:
            # The decomposition's ops are traced in place of ``func``: the mode is entered again around
            # it, under no_grad because the levels above (autograd) already handled this call.
            with no_grad(), self:
                result = decomposition(*args, **kwargs)
            if result is not NotImplemented:
                return result
        trace = self.trace
        node_args = trace.args_of(_without_trailing_defaults(func, args))
        node_kwargs = trace.args_of(_without_defaults(func, kwargs))
        out = func.call_below("python", *args, **kwargs)
        node = trace.graph.create_node("call_function", func, node_args, node_kwargs, name=func.name)
        node.meta["val"] = pytree.tree_map(_meta_val, out)
        if trace.record_stack_traces:
            stack = _user_stack()
            if stack is not None:
                node.meta["stack_trace"] = stack
        trace.track(out, node)
        return out


_defaults: dict[OpOverload, dict[str, Any]] = {}


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    return type(value) in (bool, int, float, str) and type(value) is type(default) and value == default


def _without_trailing_defaults(func: OpOverload, args: tuple) -> tuple:
    """Positional arguments without the trailing ones that equal their defaults."""
    arguments = func.schema.arguments
    end = len(args)
    while end and end <= len(arguments):
        arg = arguments[end - 1]
        if arg.kwarg_only or not arg.has_default or not _is_default(args[end - 1], arg.default):
            break
        end -= 1
    return args if end == len(args) else args[:end]


def _without_defaults(func: OpOverload, kwargs: dict) -> dict:
    """The keyword arguments that differ from the schema's defaults: the call as it was written."""
    if not kwargs:
        return kwargs
    defaults = _defaults.get(func)
    if defaults is None:
        defaults = _defaults[func] = {a.name: a.default for a in func.schema.arguments if a.has_default}
    kept = {}
    for name, value in kwargs.items():
        if name in defaults and _is_default(value, defaults[name]):
            continue
        kept[name] = value
    return kept


def _argument_names(fn: Callable, count: int) -> list[str] | None:
    """The names of ``fn``'s first ``count`` positional parameters, or None where they are unknown."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else None


def _placeholder_names(fn: Callable, args: tuple) -> tuple[list[str], list[str]]:
    """The function's argument names, and one placeholder name per leaf of the arguments as PyTorch
    gives them: ``x_1`` for ``x``, ``p_1, p_2, ...`` for the leaves of a structured ``p``;
    ``arg0_1, ...`` when the names are unknown."""
    names = _argument_names(fn, len(args)) or [f"arg{i}" for i in range(len(args))]
    leaves = []
    for name, arg in zip(names, args, strict=True):
        count = len(tree_flatten(arg)[0])
        leaves.extend(f"{name}_{k}" for k in range(1, count + 1))
    return names, leaves


def make_fx(
    f: Callable,
    decomposition_table: dict | None = None,
    tracing_mode: str = "real",
    _allow_non_fake_inputs: bool = False,
    *,
    pre_dispatch: bool = False,
    record_module_stack: bool = False,
    _allow_fake_constant: bool = False,
    _error_on_data_dependent_ops: bool = True,
    record_stack_traces: bool = True,
) -> Callable[..., GraphModule]:
    """A function that traces ``f`` on the arguments it is given and returns a ``GraphModule``."""
    if tracing_mode not in TRACING_MODES:
        raise AssertionError(f"Unexpected tracing type: {tracing_mode}")
    if pre_dispatch:
        raise NotImplementedError("make_fx(pre_dispatch=True) is not available: ops are traced below autograd")

    def wrapped(*args: Any) -> GraphModule:
        started = time.perf_counter()
        gm = _trace(f, args, decomposition_table, tracing_mode, _allow_non_fake_inputs, record_stack_traces)
        log_traced(f"make_fx({tracing_mode})", getattr(f, "__qualname__", type(f).__name__), gm, started)
        return gm

    return wrapped


def _trace(f, args, decomposition_table, tracing_mode, allow_non_fake_inputs, record_stack_traces) -> GraphModule:
    global _PLAIN_KINDS
    if not _PLAIN_KINDS:
        _PLAIN_KINDS = _plain_kinds()
    from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    leaves, in_spec = tree_flatten(tuple(args))
    trace = _Trace(record_stack_traces)
    arg_names, names = _placeholder_names(f, args)
    if not all(child.is_leaf() for child in in_spec.children_specs):
        # Structured arguments: the generated forward takes them as given and flattens them.
        trace.graph._codegen = _PyTreeCodeGen(_PyTreeInfo(arg_names, in_spec, None))
    fake_mode = None
    if tracing_mode != "real":
        shape_env = None
        if tracing_mode == "symbolic":
            from ember.fx.experimental.symbolic_shapes import ShapeEnv

            shape_env = ShapeEnv()
        existing = next((x.fake_mode for x in leaves if isinstance(x, FakeTensor)), None)
        fake_mode = existing or FakeTensorMode(allow_non_fake_inputs=allow_non_fake_inputs, shape_env=shape_env)
    inputs = []
    for name, value in zip(names, leaves, strict=True):
        if fake_mode is not None and isinstance(value, Tensor) and not isinstance(value, FakeTensor):
            value = fake_mode.from_tensor(value, source=f"{name}")
        node = trace.graph.create_node("placeholder", name, (), {}, name=name)
        node.meta["val"] = _meta_val(value)
        if isinstance(value, Tensor):
            trace.tensors[id(value)] = (value, node)
            _record_symbols(trace, value, node)
        inputs.append(value)
    mode = ProxyTorchDispatchMode(trace, tracing_mode, decomposition_table)
    with fake_mode if fake_mode is not None else contextlib.nullcontext(), mode:
        out = f(*tree_unflatten(inputs, in_spec))
    trace.graph.create_node("output", "output", (trace.args_of(out),), {})
    gm = GraphModule(trace.root, trace.graph)
    if fake_mode is not None and getattr(fake_mode, "shape_env", None) is not None:
        gm.shape_env = fake_mode.shape_env
    return gm


def _record_symbols(trace: _Trace, tensor: Tensor, node: Node) -> None:
    """Which input size or stride each plain size symbol is, for ``sym_size`` nodes made on use."""
    for what, values in (("size", tensor.shape), ("stride", tensor.stride())):
        for dim, v in enumerate(values):
            if isinstance(v, SymInt):
                expr = v.node.expr
                if getattr(expr, "is_Symbol", False) and expr not in trace.symbol_sources:
                    trace.symbol_sources[expr] = (node, what, dim, v)
    offset = tensor.storage_offset()
    if isinstance(offset, SymInt) and getattr(offset.node.expr, "is_Symbol", False):
        trace.symbol_sources.setdefault(offset.node.expr, (node, "storage_offset", None, offset))


def get_isolated_graphmodule(func: Callable, args: tuple, kwargs: dict, tracing_mode: str = "real") -> GraphModule:
    """A graph of ``func(*args, **kwargs)`` traced apart from any trace in progress."""
    return make_fx(lambda a, k: func(*a, **k), tracing_mode=tracing_mode)(args, kwargs)
