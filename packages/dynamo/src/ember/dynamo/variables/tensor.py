"""Tensors and symbolic sizes: values that live in the graph, each with its fake example."""

from __future__ import annotations

from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import ConstantVariable, VariableTracker

# Tensor attributes known from the fake example alone (no graph node).
_STATIC_ATTRS = frozenset(
    {"dtype", "device", "ndim", "requires_grad", "is_leaf", "layout", "is_cuda", "is_sparse", "is_quantized", "is_meta"}
)
# Tensor methods whose answer depends on metadata only: answered at capture time from the fake.
_STATIC_METHODS = frozenset(
    {
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "element_size",
        "is_floating_point",
        "is_complex",
        "is_contiguous",
        "stride",
        "size",
        "get_device",
        "is_signed",
        "type",
        "storage_offset",
    }
)
# Methods that need the data: a graph break (unless capture_scalar_outputs allows item()).
_DATA_METHODS = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "data_ptr"})
# Methods that run the autograd engine or change what it does with this tensor: a graph break (the
# code before runs as a graph, the engine then runs eagerly through it, as PyTorch without compiled
# autograd). Captured in a graph, ``backward()`` ran again when AOT autograd traced the graph.
_AUTOGRAD_METHODS = frozenset({"backward", "register_hook", "retain_grad", "register_post_accumulate_grad_hook"})
# Graph-level attributes recorded as getattr nodes.
_GRAPH_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})


class TensorVariable(VariableTracker):
    """A tensor in the graph: an fx node and the fake tensor it would be."""

    real_value: Any = None  # the real tensor, for a graph input (a dict may be keyed by it)

    def __init__(self, node: Any, example: Any, source=None) -> None:
        self.node = node
        self.example = example
        self.source = source
        node.meta["example_value"] = example

    def python_type(self) -> type:
        return type(self.example)

    def truth(self, tx) -> bool:
        raise Unsupported(
            "the truth value of a tensor depends on its data",
            "branch on shapes or Python values, or use ember.where / ember.cond for data-dependent control flow",
        )

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.functions import TensorMethodVariable

        ex = self.example
        if name == "shape":
            return size_variable(tx, ex.shape, self)
        if name in _STATIC_ATTRS:
            return ConstantVariable(getattr(ex, name))
        if name in _GRAPH_ATTRS:
            return tx.output.call_graph("call_function", getattr, [self, ConstantVariable(name)], {})
        if name == "grad":
            value = tx.output.input_value(self)
            pending = None if value is None else tx.output.side_effects.pending_grad(value)
            if pending is not None:  # set to None earlier in the frame
                return pending
            if value is None or self.source is None:
                raise Unsupported(
                    "reading .grad of a tensor made inside the compiled region",
                    "read gradients of inputs and parameters only",
                )
            from ember.dynamo.source import AttrSource
            from ember.dynamo.variables.builder import wrap

            return wrap(tx, value.grad, AttrSource(self.source, "grad"))
        if callable(getattr(type(ex), name, None)):
            return TensorMethodVariable(self, name)
        raise Unsupported(f"Tensor attribute {name!r} is not supported")

    def call_method(self, tx, name, args, kwargs):
        from ember.dynamo import config

        ex = self.example
        if name in _DATA_METHODS and not (name == "item" and config.capture_scalar_outputs):
            raise Unsupported(
                f"Tensor.{name}() needs the tensor's data",
                "keep the value as a tensor, or set ember._dynamo.config.capture_scalar_outputs = True for item()",
            )
        if name in _AUTOGRAD_METHODS:
            raise Unsupported(
                f"Tensor.{name}() runs or changes the autograd engine, which graphs do not capture",
                "the code before it runs as a graph and the engine runs eagerly through it",
            )
        if name in _STATIC_METHODS:
            cargs = [a.as_python_constant() for a in args]
            ckw = {k: v.as_python_constant() for k, v in kwargs.items()}
            if name == "size" or (name == "type" and not cargs and not ckw):
                if name == "type":
                    return ConstantVariable(ex.type())
                value = ex.size(*cargs)
                return size_variable(tx, value, self) if not cargs else sym_or_const(tx, value, self, cargs[0])
            return ConstantVariable(getattr(ex, name)(*cargs, **ckw))
        if name == "__len__":
            return sym_or_const(tx, len(ex), self, 0)
        if name in {"__getitem__"}:
            import operator

            return tx.output.call_graph("call_function", operator.getitem, [self, args[0]], {})
        if name == "__setitem__":
            import operator

            return tx.output.call_graph("call_function", operator.setitem, [self, *args], {})
        return tx.output.call_graph("call_method", name, [self, *args], kwargs)

    def unpack(self, tx) -> list[VariableTracker]:
        import operator

        n = self.example.shape[0] if self.example.ndim else None
        if n is None:
            raise Unsupported("iteration over a 0-d tensor")
        if not isinstance(n, int):
            raise Unsupported("iterating over a tensor of dynamic length")
        return [
            tx.output.call_graph("call_function", operator.getitem, [self, ConstantVariable(i)], {}) for i in range(n)
        ]

    def describe(self) -> str:
        return f"a tensor {tuple(self.example.shape)}"

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name})"


class SymNodeVariable(VariableTracker):
    """A symbolic int/float/bool (a SymInt from a dynamic size), with its node in the graph."""

    def __init__(self, node: Any, value: Any) -> None:
        self.node = node
        self.value = value
        node.meta["example_value"] = value

    def python_type(self) -> type:
        return type(self.value)

    def truth(self, tx) -> bool:
        from ember.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        try:
            return bool(self.value)  # guards through the ShapeEnv
        except GuardOnDataDependentSymNode:
            raise data_dependent_branch(self.value) from None

    def as_int(self) -> int:
        from ember.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, guard_int

        try:
            return guard_int(self.value)
        except GuardOnDataDependentSymNode:
            raise data_dependent_branch(self.value) from None

    def call_method(self, tx, name, args, kwargs):
        return tx.output.call_graph("call_method", name, [self, *args], kwargs)

    def describe(self) -> str:
        return f"a symbolic {type(self.value).__name__} ({self.value})"


def data_dependent_branch(value: Any) -> Unsupported:
    """The graph break for a decision on a value only known when the graph runs (an unbacked symbol)."""
    return Unsupported(
        f"a decision depends on the data-dependent value {value} (from Tensor.item() or a data-dependent size)",
        "keep the branch out of the compiled region, or use ember.cond / ember.where on tensors",
    )


class SliceVariable(VariableTracker):
    """A slice with a symbolic bound (``x[:n]`` with ``n`` dynamic): a graph argument, not a constant."""

    def __init__(self, parts: list[VariableTracker]) -> None:
        self.parts = parts

    def as_python_constant(self) -> Any:
        raise Unsupported("a slice with a symbolic bound is not a constant")

    def concrete(self) -> slice:
        """The slice with its symbolic bounds fixed to their values (guarded)."""
        return slice(*[p.as_int() if isinstance(p, SymNodeVariable) else p.as_python_constant() for p in self.parts])

    def describe(self) -> str:
        return "a slice with a symbolic bound"


def sym_or_const(tx, value: Any, tensor: TensorVariable | None = None, dim: int | None = None) -> VariableTracker:
    """A size as a constant, or (symbolic) as the graph value that computes it."""
    if type(value) in (int, float, bool):
        return ConstantVariable(value)
    try:
        return tx.output.sym_variable(value)
    except Unsupported:
        if tensor is None or dim is None:
            raise
    node = tx.output.graph.call_method("size", (tensor.node, dim))
    return SymNodeVariable(node, value)


def size_variable(tx, shape, tensor: TensorVariable | None = None) -> VariableTracker:
    from ember.core.tensor import Size
    from ember.dynamo.variables.containers import TupleVariable

    return TupleVariable([sym_or_const(tx, s, tensor, i) for i, s in enumerate(shape)], cls=Size)
