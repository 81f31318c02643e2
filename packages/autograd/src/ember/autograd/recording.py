"""The autograd level of the dispatcher: run an op and record its node.

``record`` is called for every op an argument of which requires grad. With grad mode off, or for
ops whose outputs carry no gradient, it only runs the op. Otherwise it binds the arguments to the
schema's names once, saves what the op's formula asks for, runs the op below this level, and gives
each floating-point output the new ``OpNode`` as ``grad_fn``.

In-place ops: a leaf that requires grad refuses them; an input the formula saves as ``self`` is
cloned before it is overwritten; and an in-place op on a view rebases the view's base (``views.py``).
"""

from __future__ import annotations

from ember.autograd import anomaly, views
from ember.autograd.grad_mode import state
from ember.autograd.graph import Node, SavedTensor
from ember.autograd.registry import is_nondifferentiable, lookup
from ember.core import dtypes as D
from ember.core.schema import _NO_DEFAULT
from ember.core.tensor import Tensor

_DIFFERENTIABLE = (D.FLOATING, D.COMPLEX)


class TensorMeta:
    """What a formula may ask of a tensor it did not save."""

    __slots__ = ("_shape", "device", "dtype")

    def __init__(self, t: Tensor) -> None:
        self._shape, self.dtype, self.device = t._shape, t.dtype, t.device

    @property
    def shape(self):
        from ember.core.tensor import Size

        return Size(self._shape)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self._shape[dim]

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        from ember.core.layout import numel

        return numel(self._shape)


class _Plan:
    """Per op: how to bind a call's arguments to schema names, and what the op is."""

    __slots__ = ("defaults", "entry", "inplace", "is_out", "names", "nondiff", "op", "positional")

    def __init__(self, op) -> None:
        schema = op.schema
        self.op = op
        self.names = tuple(a.name for a in schema.arguments)
        self.positional = tuple(a.name for a in schema.arguments if not a.kwarg_only)
        self.defaults = {a.name: (a.default if a.default is not _NO_DEFAULT else None) for a in schema.arguments}
        self.is_out = schema.is_out
        self.inplace = schema.is_inplace or (bool(schema.arguments) and schema.arguments[0].is_write)
        self.entry = lookup(op)
        self.nondiff = is_nondifferentiable(op)

    def bind(self, args: tuple, kwargs: dict) -> dict:
        bound = dict(self.defaults)
        bound.update(zip(self.positional, args, strict=False))
        if kwargs:
            bound.update(kwargs)
        return bound


_plans: dict = {}


def plan_of(op) -> _Plan:
    plan = _plans.get(op)
    if plan is None:
        plan = _plans[op] = _Plan(op)
    return plan


class OpNode(Node):
    """The backward of one recorded op call: its formula over what the call saved."""

    __slots__ = ("_name", "bound", "entry", "inputs_meta", "list_sizes", "n_outputs", "outputs_meta", "saved_result")

    def __init__(self, entry, bound: dict, edges: tuple, inputs_meta: list, list_sizes: dict) -> None:
        super().__init__(edges)
        self.entry = entry
        self.bound = bound
        self.inputs_meta = inputs_meta
        self.list_sizes = list_sizes
        self.n_outputs = 1
        self.outputs_meta: list = []
        self.saved_result = None
        self._name = None

    def name(self) -> str:
        if self._name is None:
            op = self.entry.op
            base = "".join(part.capitalize() for part in op.name.strip("_").split("_"))
            self._name = f"{base}Backward0"
        return self._name

    def release(self) -> None:
        for value in self.bound.values():
            if type(value) is SavedTensor:
                value.release()
            elif type(value) is list:
                for v in value:
                    if type(v) is SavedTensor:
                        v.release()
        if self.saved_result is not None:
            for s in self.saved_result:
                if s is not None:
                    s.release()

    def apply(self, grads: tuple) -> tuple:
        entry = self.entry
        kw = {}
        for name, value in self.bound.items():
            if type(value) is SavedTensor:
                value = value.unpack(self)
            elif type(value) is list and value and type(value[0]) is SavedTensor:
                value = [v.unpack(self) for v in value]
            kw[name] = value
        if self.saved_result is not None:
            outs = [s.unpack(self) if s is not None else None for s in self.saved_result]
            kw["result"] = outs[0] if self.n_outputs == 1 else tuple(outs)
        if entry.wants_needs:
            kw["needs"] = self._needs()
        if self.n_outputs == 1:
            g = grads[0]
        else:
            g = tuple(grads)
        result = entry.formula(g, **kw)
        return self._fit(result)

    def _needs(self) -> tuple:
        needs, i = [], 0
        for name in self.entry.tensor_args:
            n = self.list_sizes.get(name)
            if n is None:
                needs.append(self.next_functions[i][0] is not None)
                i += 1
            else:
                needs.append([e[0] is not None for e in self.next_functions[i : i + n]])
                i += n
        return tuple(needs)

    def _fit(self, result) -> tuple:
        from ember.autograd.accumulate import fit

        names = self.entry.tensor_args
        if len(names) == 1:
            result = (result,)
        elif not isinstance(result, tuple | list):
            raise RuntimeError(f"{self.name()}: the formula returned one gradient for {len(names)} inputs")
        flat = []
        for name, value in zip(names, result, strict=True):
            n = self.list_sizes.get(name)
            if n is None:
                flat.append(value)
            else:
                flat.extend([None] * n if value is None else value)
        out = []
        for (node, _), meta, g in zip(self.next_functions, self.inputs_meta, flat, strict=True):
            if node is None or g is None:
                out.append(None)
            else:
                out.append(fit(g, meta[0], meta[1]))
        return tuple(out)


def _refuse_out(op) -> None:
    raise RuntimeError(
        f"{op.name}(): functions with out=... arguments don't support automatic differentiation, but one of the "
        "arguments requires grad."
    )


def _check_inplace_target(t: Tensor) -> None:
    if t.grad_fn is None and t.requires_grad and t._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = t._base
    if base is not None and base.grad_fn is None and base.requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def record(op, args: tuple, kwargs: dict, call_below):
    if not state.enabled:
        return call_below(args, kwargs)
    plan = _plans.get(op) or plan_of(op)
    if plan.is_out:
        _refuse_out(op)
    entry = plan.entry
    if entry is None:
        if plan.nondiff:
            return call_below(args, kwargs)
        if op.decomposition is not None:
            return op.decomposition(*args, **kwargs)
        raise RuntimeError(f"the derivative for '{op.namespace}::{op.schema.qualified}' is not implemented")

    bound = plan.bind(args, kwargs)
    edges, metas, list_sizes = [], [], {}
    any_grad = False
    for name in entry.tensor_args:
        value = bound[name]
        if name in entry.list_args:
            items = list(value) if value is not None else []
            list_sizes[name] = len(items)
        else:
            items = (value,)
        for t in items:
            if isinstance(t, Tensor) and t.requires_grad:
                edges.append(views.edge(t))
                any_grad = True
            else:
                edges.append((None, 0))
            metas.append((t._shape, t.dtype) if isinstance(t, Tensor) else None)
    if not any_grad:
        return call_below(args, kwargs)

    inplace = plan.inplace
    target = args[0] if inplace else None
    if inplace:
        _check_inplace_target(target)
    save = entry.save
    for name in entry.tensor_args:
        value = bound[name]
        if name in save:
            if name in entry.list_args:
                bound[name] = [SavedTensor(v) for v in value]
            elif isinstance(value, Tensor):
                if inplace and value is target:
                    value = value.clone()
                bound[name] = SavedTensor(value)
        elif name in entry.list_args:
            bound[name] = [TensorMeta(v) if isinstance(v, Tensor) else v for v in (value or ())]
        elif isinstance(value, Tensor):
            bound[name] = TensorMeta(value)
    for name in save:
        value = bound.get(name)
        if name not in entry.tensor_args and isinstance(value, Tensor):
            bound[name] = SavedTensor(value)

    node = OpNode(entry, bound, tuple(edges), metas, list_sizes)
    if anomaly.state.enabled:
        anomaly.remember(node)
    if inplace and target._base is not None:
        result = call_below(args, kwargs)
        views.rebase(target, node)
        _save_result(node, entry, (target,), save)
        return result

    result = call_below(args, kwargs)
    outputs = result if isinstance(result, tuple | list) else (result,)
    node.n_outputs = len(outputs)
    node.outputs_meta = [(o._shape, o.dtype) if isinstance(o, Tensor) else None for o in outputs]
    differentiable = entry.output_differentiable
    inputs = args if not inplace else ()
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor) or out.dtype.category not in _DIFFERENTIABLE:
            continue
        if differentiable is not None and not differentiable[i]:
            continue
        if not inplace and any(out is a for a in inputs):
            continue  # the op handed back its input itself: nothing to record
        out.grad_fn = node
        out._output_nr = i
        out.requires_grad = True
    _save_result(node, entry, outputs, save)
    return result


def _save_result(node: OpNode, entry, outputs, save) -> None:
    if "result" in save:
        node.saved_result = [
            SavedTensor(o, is_output=o.grad_fn is node) if isinstance(o, Tensor) else None for o in outputs
        ]
