"""The graph being captured: its inputs (by source), its nodes on fake tensors, its guards, and the
call to the backend with the real example inputs."""

from __future__ import annotations

import operator
from typing import Any

from ember.dynamo.exc import BackendCompilerFailed, Unsupported
from ember.dynamo.guards import Guard, GuardKind, TensorSpec, autocast_state
from ember.dynamo.side_effects import SideEffects
from ember.dynamo.source import LocalSource, Source, TensorPropertySource
from ember.dynamo.variables.base import ConstantVariable, VariableTracker


def _set_grad_enabled(mode: bool) -> None:
    """Switch grad mode from inside a graph (``with ember.no_grad():`` in the compiled region)."""
    from ember.dynamo.trace_rules import api as _api

    api = _api()

    api.set_grad_enabled(mode)


class OutputGraph:
    def __init__(self, code, f_globals: dict, f_locals: dict, options: Any, frame_state: Any) -> None:
        from ember.dynamo.trace_rules import api as _api

        api = _api()
        from ember._subclasses.fake_tensor import FakeTensorMode
        from ember.fx import Graph

        self.code = code
        self.f_globals = f_globals
        self.f_locals = f_locals
        self.options = options
        self.frame_state = frame_state
        self.graph = Graph()
        # The ShapeEnv (and sympy) is made only when a size or scalar is dynamic.
        self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True, static_shapes=True)
        self.inputs: list[tuple[Source, Any, Any]] = []  # (source, real value, placeholder node)
        self.input_vts: dict[str, VariableTracker] = {}  # source name -> tracker
        self.input_values: dict[int, Any] = {}  # id(tracker) -> real value
        self.guards: dict[tuple, Guard] = {}
        self.wrapped: dict[int, VariableTracker] = {}
        self.keepalive: list[Any] = []
        self.real_cells: dict[int, Any] = {}
        self.side_effects = SideEffects()
        self.initial_grad = api.is_grad_enabled()
        self.symbols: dict[Any, VariableTracker] = {}  # sympy symbol -> SymInt placeholder tracker
        self.shape_inputs: list[tuple[Any, Source]] = []
        self.dynamic = False
        self.op_count = 0
        self.grad_changed = False  # the graph sets the grad mode: it runs even with no other op
        self.grad_mode = self.initial_grad  # the mode where the traced region ends (or breaks)
        self.add_guard(None, GuardKind.GRAD_MODE, self.initial_grad)
        self.add_guard(None, GuardKind.DEFAULT_DTYPE, api.get_default_dtype())
        self.add_guard(None, GuardKind.AUTOCAST, autocast_state())
        from ember.dynamo import config

        # item() and data-dependent sizes become unbacked symbols: the fakes need a ShapeEnv for them.
        self.capture_scalars = bool(config.capture_scalar_outputs)
        self.capture_dynamic_shapes = bool(config.capture_dynamic_output_shape_ops)
        if self.capture_scalars or self.capture_dynamic_shapes:
            self.shape_env  # noqa: B018

    @property
    def shape_env(self) -> Any:
        if self.fake_mode.shape_env is None:
            from ember.fx.experimental.symbolic_shapes import ShapeEnv

            self.fake_mode.shape_env = ShapeEnv(
                allow_scalar_outputs=self.capture_scalars,
                allow_dynamic_output_shape_ops=self.capture_dynamic_shapes,
            )
        return self.fake_mode.shape_env

    # -- guards ------------------------------------------------------------------------------------
    def add_guard(self, source: Source | None, kind: GuardKind, value: Any = None) -> None:
        key = (source.name() if source is not None else None, kind)
        if key not in self.guards:
            self.guards[key] = Guard(source, kind, value)

    # -- inputs ------------------------------------------------------------------------------------
    def _placeholder(self, source: Source) -> Any:
        import re

        name = re.sub(r"\W+", "_", source.name()).strip("_") or "arg"
        node = self.graph.placeholder(name)
        node.meta["source"] = source
        return node

    def tensor_input(self, value: Any, source: Source) -> VariableTracker:
        from ember.dynamo.variables.tensor import TensorVariable

        existing = self.input_vts.get(source.name())
        if existing is not None:
            return existing
        dims = self._dynamic_dims(source, value)
        if dims:
            from ember.fx.experimental.symbolic_shapes import DimDynamic

            self.shape_env  # noqa: B018  (made on first need)

            ctx = _SymbolicContext([DimDynamic.DYNAMIC if i in dims else DimDynamic.STATIC for i in range(value.ndim)])
            fake = self.fake_mode.from_tensor(value, source=source.name(), symbolic_context=ctx, static_shapes=False)
            self.dynamic = True
        else:
            fake = self.fake_mode.from_tensor(value, source=source.name(), static_shapes=True)
        node = self._placeholder(source)
        vt = TensorVariable(node, fake, source)
        vt.real_value = value
        self.inputs.append((source, value, node))
        self.input_vts[source.name()] = vt
        self.input_values[id(vt)] = value
        self.keepalive.append(value)
        sizes = tuple(None if i in dims else int(s) for i, s in enumerate(value.shape))
        strides = tuple(None if dims else int(s) for s in value.stride())
        spec = TensorSpec(type(value), value.dtype, value.device, sizes, strides, bool(value.requires_grad))
        self.add_guard(source, GuardKind.TENSOR_MATCH, spec)
        if dims:
            self.shape_inputs.append((fake, source))
            for i, s in enumerate(fake.shape):
                self._bind_symbol(s, TensorPropertySource(source, "size", i))
        return vt

    def _bind_symbol(self, value: Any, source: Source) -> None:
        from ember.dynamo.variables.tensor import SymNodeVariable

        node_expr = getattr(getattr(value, "node", None), "expr", None)
        if node_expr is None or not getattr(node_expr, "is_Symbol", False) or node_expr in self.symbols:
            return
        node = self._placeholder(source)
        vt = SymNodeVariable(node, value)
        vt.source = source
        self.symbols[node_expr] = vt
        self.inputs.append((source, None, node))

    def _dynamic_dims(self, source: Source, value: Any) -> set[int]:
        dyn = self.options.dynamic
        if dyn is False or value.ndim == 0:
            return set()
        marked = set(getattr(value, "_dynamo_dynamic_indices", ()) or ())
        if dyn is True:
            return set(range(value.ndim)) - set(getattr(value, "_dynamo_static_indices", ()) or ())
        asked = set()
        if self.frame_state is not None and hasattr(self.frame_state, "dynamic_dims"):
            asked = set(self.frame_state.dynamic_dims(source.name(), value) or ())
        return marked | asked

    def dynamic_scalar(self, source: Source, value: Any) -> bool:
        if type(value) is not int or self.options.dynamic is False:
            return False
        if self.options.dynamic is True:
            return value not in (0, 1) and isinstance(source, LocalSource)  # 0 and 1 specialize, as in PyTorch
        if self.frame_state is not None and hasattr(self.frame_state, "dynamic_scalar"):
            return bool(self.frame_state.dynamic_scalar(source.name(), value))
        return False

    def scalar_input(self, value: int, source: Source) -> VariableTracker:
        from ember.dynamo.variables.tensor import SymNodeVariable

        sym = self.shape_env.create_symintnode(
            self.shape_env.create_symbol(value, source.name()), hint=value, source=source.name()
        )
        node = self._placeholder(source)
        vt = SymNodeVariable(node, sym)
        vt.source = source
        self.inputs.append((source, None, node))
        self.shape_inputs.append((sym, source))
        self.dynamic = True
        return vt

    def input_value(self, vt: VariableTracker) -> Any:
        return self.input_values.get(id(vt))

    def sym_variable(self, value: Any) -> VariableTracker:
        expr = getattr(getattr(value, "node", None), "expr", None)
        if expr is not None and expr in self.symbols:
            return self.symbols[expr]
        from ember.fx.experimental.symbolic_shapes import is_concrete_int

        if is_concrete_int(value):
            return ConstantVariable(int(value))
        raise Unsupported(f"a symbolic size {value} that capture cannot place in the graph")

    # -- nodes ---------------------------------------------------------------------------------------
    def _to_node_args(self, value: Any) -> tuple[Any, Any]:
        """(graph argument, fake example) for a tracker (recursively through containers)."""
        from ember.dynamo.variables.containers import BaseListVariable, DictVariable
        from ember.dynamo.variables.tensor import SliceVariable, SymNodeVariable, TensorVariable

        if isinstance(value, TensorVariable):
            return value.node, value.example
        if isinstance(value, SymNodeVariable):
            return value.node, value.value
        if isinstance(value, BaseListVariable):
            pairs = [self._to_node_args(v) for v in value.items]
            ctor = list if value.python_type() is list else tuple
            return ctor(p[0] for p in pairs), value.python_type()(p[1] for p in pairs) if ctor is list else tuple(
                p[1] for p in pairs
            )
        if isinstance(value, SliceVariable):
            pairs = [self._to_node_args(p) for p in value.parts]
            return slice(*[p[0] for p in pairs]), slice(*[p[1] for p in pairs])
        if isinstance(value, DictVariable):
            pairs = {k: self._to_node_args(v) for k, v in value.items.items()}
            return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
        if value.is_python_constant():
            c = value.as_python_constant()
            return c, c
        raise Unsupported(f"{value.describe()} as an argument of a graph op")

    def call_graph(self, kind: str, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]):
        """Record one node and run it on fake tensors; the tracker of its result."""
        node_args, fake_args = zip(*[self._to_node_args(a) for a in args], strict=True) if args else ((), ())
        node_kwargs = {}
        fake_kwargs = {}
        for k, v in kwargs.items():
            node_kwargs[k], fake_kwargs[k] = self._to_node_args(v)
        try:
            with self.fake_mode:
                if kind == "call_method":
                    result = getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
                else:
                    result = target(*fake_args, **fake_kwargs)
        except Unsupported:
            raise
        except Exception as e:
            if type(e).__name__ == "GuardOnDataDependentSymNode":
                from ember.dynamo.variables.tensor import data_dependent_branch

                raise data_dependent_branch(getattr(e, "cond", e)) from None
            if type(e).__name__ in _DATA_DEPENDENT:
                raise Unsupported(
                    f"{_target_name(target)} has an output that depends on data ({type(e).__name__})",
                    "set ember._dynamo.config.capture_dynamic_output_shape_ops = True, "
                    "or move it out of the compiled region",
                ) from None
            raise Unsupported(f"{_target_name(target)} raised {type(e).__name__}: {e}") from None
        create = self.graph.call_method if kind == "call_method" else self.graph.call_function
        node = create(target, tuple(node_args), node_kwargs)
        tx = getattr(self, "current_tx", None)
        if tx is not None:  # the user's line that made the node, as PyTorch's node.stack_trace
            node.meta["stack_trace"] = "\n".join(
                f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line}' for f in tx.user_frames()
            )
        self.op_count += 1
        return self.wrap_result(node, result)

    def wrap_result(self, node: Any, result: Any) -> VariableTracker:
        from ember.core.tensor import Tensor
        from ember.dynamo.variables.containers import ListVariable, TupleVariable
        from ember.dynamo.variables.tensor import SymNodeVariable, TensorVariable

        if isinstance(result, Tensor):
            return TensorVariable(node, result)
        if isinstance(result, (tuple, list)):
            node.meta["example_value"] = result
            items = []
            for i, r in enumerate(result):
                sub = self.graph.call_function(operator.getitem, (node, i))
                items.append(self.wrap_result(sub, r))
            if isinstance(result, list):
                return ListVariable(items)
            return TupleVariable(items, cls=type(result))
        if type(result).__name__ in ("SymInt", "SymFloat", "SymBool"):
            from ember.fx.experimental.symbolic_shapes import is_concrete_int

            if is_concrete_int(result):
                self.graph.erase_node(node)
                return ConstantVariable(int(result))
            return SymNodeVariable(node, result)
        if result is None:
            return ConstantVariable(None)  # an op run for its effect (setitem, an out= op): the node stays
        if isinstance(result, (int, float, bool, str)) or type(result).__module__.startswith("ember.core"):
            if not node.users:
                self.graph.erase_node(node)
                self.op_count -= 1
            return ConstantVariable(result)
        raise Unsupported(f"a graph op returned a {type(result).__name__}")

    def set_grad_mode(self, mode: bool) -> None:
        from ember.dynamo.trace_rules import api as _api

        api = _api()

        api.set_grad_enabled(mode)
        self.graph.call_function(_set_grad_enabled, (mode,))
        self.grad_changed = True
        self.grad_mode = mode

    # -- compiling -----------------------------------------------------------------------------------
    def prune_inputs(self) -> None:
        kept = []
        for source, value, node in self.inputs:
            if node.users:
                kept.append((source, value, node))
            else:
                self.graph.erase_node(node)
        self.inputs = kept

    def compile(self, outputs: list[VariableTracker]) -> Any:
        """The backend's callable for the graph returning ``outputs`` (graph values), or None if empty."""
        from ember.fx import GraphModule

        self.graph.output(tuple(o.node for o in outputs))
        self.prune_inputs()
        gm = GraphModule({}, self.graph)
        example_inputs = [value if value is not None else self._sym_hint(node) for _, value, node in self.inputs]
        backend = self.options.backend
        try:
            compiled = backend(gm, example_inputs)
        except Exception as e:
            name = getattr(backend, "__name__", type(backend).__name__)
            raise BackendCompilerFailed(name, e) from e
        self.gm = gm
        return compiled

    def _sym_hint(self, node: Any) -> int:
        from ember.fx.experimental.symbolic_shapes import hint_int

        return hint_int(node.meta["example_value"])

    def guard_list(self) -> list[Guard]:
        return list(self.guards.values())


_DATA_DEPENDENT = frozenset(
    {"DataDependentOutputException", "DynamicOutputShapeException", "GuardOnDataDependentSymNode"}
)


class _SymbolicContext:
    def __init__(self, dynamic_sizes: list) -> None:
        self.dynamic_sizes = dynamic_sizes


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return f"Tensor.{target}"
    return getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
