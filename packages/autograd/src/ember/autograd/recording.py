"""The autograd level of the dispatcher: run an op and record its node.

``record`` is called for every op an argument of which requires grad. With grad mode off, or for
ops whose outputs carry no gradient, it only runs the op. Otherwise it binds the arguments to the
schema's names once, saves what the op's formula asks for, runs the op below this level, and gives
each floating-point output the new ``OpNode`` as ``grad_fn``.

In-place ops: a leaf that requires grad refuses them; an input the formula saves as ``self`` is
cloned before it is overwritten; and an in-place op on a view rebases the view's base (``views.py``).
"""

from __future__ import annotations

from ember.autograd import anomaly, graph, views
from ember.autograd.accumulate import fit
from ember.autograd.grad_mode import state
from ember.autograd.graph import FREED_MESSAGE, Node, SavedTensor, _sequence, grad_accumulator
from ember.autograd.registry import differentiable_decomposition, is_nondifferentiable, lookup
from ember.core import dtypes as D
from ember.core.dispatch import ops
from ember.core.schema import _NO_DEFAULT
from ember.core.tensor import Tensor

_FLOATING = D.FLOATING


class TensorMeta:
    """What a formula may ask of a tensor it did not save."""

    __slots__ = ("_offset", "_shape", "_stride", "device", "dtype")

    def __init__(self, meta: tuple) -> None:
        self._shape, self.dtype, self.device, self._stride, self._offset = meta

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

    def stride(self, dim: int | None = None):
        return self._stride if dim is None else self._stride[dim]

    def storage_offset(self) -> int:
        return self._offset


class _Plan:
    """Per op: where its tensor arguments sit in a call, and what the op is."""

    __slots__ = (
        "defaults",
        "entry",
        "fast",
        "fast_slots",
        "inplace",
        "is_out",
        "nondiff",
        "op",
        "positional",
        "saved_positions",
        "saved_slots",
        "saved_written",
        "simple",
        "tensor_positions",
        "tensor_slots",
    )

    def __init__(self, op) -> None:
        schema = op.schema
        self.op = op
        self.positional = tuple(a.name for a in schema.arguments if not a.kwarg_only)
        self.defaults = {a.name: (a.default if a.default is not _NO_DEFAULT else None) for a in schema.arguments}
        self.is_out = schema.is_out
        self.inplace = schema.is_inplace or (bool(schema.arguments) and schema.arguments[0].is_write)
        self.entry = entry = lookup(op)
        self.nondiff = is_nondifferentiable(op)
        self.fast = False  # set below: calls without keywords take ``_record_simple``
        if entry is not None:
            position = {name: i for i, name in enumerate(self.positional)}
            self.tensor_slots = tuple(
                (name, position.get(name, -1), name in entry.list_args) for name in entry.tensor_args
            )
            self.saved_slots = tuple(
                (a.name, position.get(a.name, -1)) for a in schema.arguments if a.name in entry.save
            )
            # Saved arguments the op itself writes (batch norm's running statistics): saved as it leaves them.
            self.saved_written = tuple(
                (a.name, position.get(a.name, -1))
                for a in schema.arguments
                if a.name in entry.save and a.is_write and not self.inplace
            )
            # Every tensor argument positional and none a list: ``record`` takes its quick path.
            self.simple = all(pos >= 0 and not is_list for _, pos, is_list in self.tensor_slots)
            self.tensor_positions = tuple(pos for _, pos, _ in self.tensor_slots)
            self.saved_positions = tuple(
                pos for name, pos in self.saved_slots if name in entry.tensor_args and pos >= 0
            )
            self.fast = self.simple and not self.inplace and not self.is_out
            saved = set(self.saved_positions)
            # The quick path's loop: each tensor position, whether the formula saves it there, and
            # the argument's name where the op refuses it a gradient (else None).
            self.fast_slots = tuple(
                (pos, pos in saved, name if name in entry.refused else None)
                for (name, _, _), pos in zip(self.tensor_slots, self.tensor_positions, strict=True)
            )


_plans: dict = {}


def plan_of(op) -> _Plan:
    plan = _plans.get(op)
    if plan is None:
        plan = _plans[op] = _Plan(op)
    return plan


_NO_EDGE = (None, 0)
_new_node = object.__new__
_FREED = object()  # a quick-path node's saved input after backward released it


class OpNode(Node):
    """The backward of one recorded op call: its formula over what the call saved.

    The call's arguments are kept as given, with every tensor replaced: by a ``SavedTensor`` where the
    formula saves it, else by ``None`` (its shape, dtype and device are in ``inputs_meta``); they are
    bound to the schema's names only when the node runs.
    """

    __slots__ = ("args", "inputs_meta", "plan")
    # Rarer fields go to the instance dict over these defaults, so making a node stays cheap.
    kwargs: dict = {}  # noqa: RUF012  (read only: a node with keyword arguments gets its own)
    list_sizes: dict | None = None
    n_outputs = 1
    saved_result: list | None = None
    _name: str | None = None

    def __init__(self, plan: _Plan, args: list, kwargs: dict, edges: tuple, inputs_meta: list, list_sizes) -> None:
        self.next_functions = edges
        self.seq = next(_sequence)
        self.plan = plan
        self.args = args
        if kwargs:
            self.kwargs = kwargs
        self.inputs_meta = inputs_meta
        if list_sizes is not None:
            self.list_sizes = list_sizes

    @property
    def entry(self):
        return self.plan.entry

    def name(self) -> str:
        if self._name is None:
            op = self.entry.op
            base = "".join(part.capitalize() for part in op.name.strip("_").split("_"))
            self._name = f"{base}Backward0"
        return self._name

    def release(self) -> None:
        for value in (*self.args, *self.kwargs.values()):
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

    def _bind(self) -> dict:
        plan = self.plan
        bound = dict(plan.defaults)
        bound.update(zip(plan.positional, self._arguments(), strict=False))
        if self.kwargs:
            bound.update(self.kwargs)
        metas = self.inputs_meta
        i = 0
        for name, _, is_list in plan.tensor_slots:
            value = bound[name]
            if is_list:
                n = self.list_sizes[name]
                items = value if value is not None else [None] * n
                bound[name] = [_unpack(v, metas[i + k], self) for k, v in enumerate(items)]
                i += n
            else:
                bound[name] = _unpack(value, metas[i], self)
                i += 1
        for name, _ in plan.saved_slots:
            value = bound[name]
            if type(value) is SavedTensor:
                bound[name] = value.unpack(self)
        return bound

    def _arguments(self):
        return self.args

    def apply(self, grads: tuple) -> tuple:
        entry = self.plan.entry
        kw = self._bind()
        if self.saved_result is not None:
            outs = [s.unpack(self) if s is not None else None for s in self.saved_result]
            kw["result"] = outs[0] if self.n_outputs == 1 else tuple(outs)
        if entry.wants_needs:
            kw["needs"] = self._needs()
        g = grads[0] if self.n_outputs == 1 else tuple(grads)
        return self._fit(entry.formula(g, **kw))

    def _needs(self) -> tuple:
        needs, i = [], 0
        for name, _, is_list in self.plan.tensor_slots:
            if is_list:
                n = self.list_sizes[name]
                needs.append([e[0] is not None for e in self.next_functions[i : i + n]])
                i += n
            else:
                needs.append(self.next_functions[i][0] is not None)
                i += 1
        return tuple(needs)

    def _fit(self, result) -> tuple:
        slots = self.plan.tensor_slots
        if len(slots) == 1:
            result = (result,)
        elif not isinstance(result, tuple | list):
            raise RuntimeError(f"{self.name()}: the formula returned one gradient for {len(slots)} inputs")
        flat = []
        for (name, _, is_list), value in zip(slots, result, strict=True):
            if not is_list:
                flat.append(value)
            else:
                n = self.list_sizes[name]
                flat.extend([None] * n if value is None else value)
        out = []
        for i, ((node, _), meta, g) in enumerate(zip(self.next_functions, self.inputs_meta, flat, strict=True)):
            if node is None or g is None:
                out.append(None)
                continue
            if type(meta) is int:  # a saved input of a ``QuickOpNode``: the tensor has its metadata
                t = self.args[self.plan.tensor_positions[i]]
                meta = (t._shape, t.dtype)
            fitted = fit(g, meta[0], meta[1])
            if fitted._shape != meta[0]:
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - got {list(g._shape)} but "
                    f"expected shape compatible with {list(meta[0])}"
                )
            out.append(fitted)
        return tuple(out)


class QuickOpNode(OpNode):
    """An ``OpNode`` of the quick path (``_record_simple``): it keeps each saved input itself and, as
    its ``inputs_meta`` entry, the version the tensor had (an int): a ``SavedTensor`` per input
    costs as much as the rest of the recording. Backward checks those versions as
    ``SavedTensor.unpack`` does, and reads the inputs' metadata from the tensors."""

    __slots__ = ()

    def _arguments(self):
        args = self.args
        for pos, meta in zip(self.plan.tensor_positions, self.inputs_meta, strict=True):
            if type(meta) is int:
                t = args[pos]
                if t is _FREED:
                    raise RuntimeError(FREED_MESSAGE)
                if t._storage.version != meta:
                    raise RuntimeError(SavedTensor.of_input(t, meta)._modified_message(t))
        return args

    def release(self) -> None:
        args = self.args
        for pos, meta in zip(self.plan.tensor_positions, self.inputs_meta, strict=True):
            if type(meta) is int:
                args[pos] = _FREED
        super().release()  # the saved outputs


def _unpack(value, meta, node):
    if type(value) is SavedTensor:
        return value.unpack(node)
    if meta is None or type(meta) is int:  # not a tensor, or a QuickOpNode's saved input
        return value
    return TensorMeta(meta)


def _refuse_out(op) -> None:
    raise RuntimeError(
        f"{op.name}(): functions with out=... arguments don't support automatic differentiation, but one of the "
        "arguments requires grad."
    )


def _refuse_argument(op, name: str) -> None:
    raise RuntimeError(
        f"The function '{op.name}' is not differentiable with respect to argument '{name}'. This input cannot "
        "have requires_grad True."
    )


_DETACH = ops.aten.detach.default
_NO_GRAD_VIEW_INPLACE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use "
    "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if "
    "you want the inplace to be tracked)."
)


def _mark_no_grad_views(result) -> None:
    """A view taken under no_grad of a tensor that requires grad requires grad too, as in PyTorch, but
    has no history: gradients stop at it (``views.edge``) and in-place ops on it with grad mode on
    are refused."""
    for out in result if isinstance(result, tuple | list) else (result,):
        base = out._base if isinstance(out, Tensor) else None
        if base is not None and base.requires_grad and out.dtype.category >= _FLOATING:
            out.requires_grad = True
            out._no_grad_view = True
            out._view_version = out._storage.version  # a later write makes it unusable (views.edge)


def _check_inplace_target(t: Tensor) -> None:
    base = t._base
    if base is not None and t.grad_fn is None and "_no_grad_view" in t.__dict__:  # (a Function's output has one)
        raise RuntimeError(_NO_GRAD_VIEW_INPLACE)
    if t.grad_fn is None and t.requires_grad and base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if base is not None and ((base.grad_fn is None and base.requires_grad) or (t.grad_fn is None and t.requires_grad)):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if base is not None and "_custom_view_error" in t.__dict__:  # a view made by a custom Function
        raise RuntimeError(t._custom_view_error)
    if base is not None and "_multi_view" in t.__dict__:
        # One node for several views (unbind, split) cannot be rebased for one of them, as in PyTorch.
        i, node = t._multi_view
        raise RuntimeError(
            f"Output {i} of {node.name().removesuffix('Backward0')} is a view and is being modified inplace. This "
            "view is the output of a function that returns multiple views. Such functions do not allow the output "
            "views to be modified inplace. You should replace the inplace operation by an out-of-place one."
        )


def record(op, args: tuple, kwargs: dict, call_below):
    if not state.enabled:
        result = call_below(args, kwargs)
        if "view" in op.tags and op is not _DETACH:
            _mark_no_grad_views(result)
        return result
    plan = _plans.get(op) or plan_of(op)
    if plan.fast and not kwargs and not graph._hooks_in_use:
        return _record_simple(plan, args, kwargs, call_below)
    entry = plan.entry
    if entry is None or plan.is_out:
        if plan.is_out:
            _refuse_out(op)
        if plan.nondiff:
            return call_below(args, kwargs)
        if op.autograd is not None or op.namespace != "aten":
            # A formula from ember.library.register_autograd, or a custom op (custom_ops.py).
            from ember.autograd import custom_ops

            result = custom_ops.record(op, args, kwargs, call_below)
            if result is not NotImplemented:
                return result
        decomposition = differentiable_decomposition(op)
        if decomposition is not None:
            return decomposition(*args, **kwargs)
        raise RuntimeError(f"the derivative for '{op.namespace}::{op.schema.qualified}' is not implemented")
    # In-place calls with grad are rare (optimizers step under no_grad): the general path serves them,
    # keyword calls, list arguments, and every call while saved-tensor hooks are in use.
    return _record_general(op, plan, args, kwargs, call_below)


def _record_simple(plan: _Plan, args: tuple, kwargs: dict, call_below):
    """``record`` for the commonest call: out of place, every tensor argument positional, none a list.

    The same steps as the general path in one frame: an op's recording costs about as much as the
    op itself, so each attribute read and call here shows in every training step. Saved inputs stay
    in the node's arguments as themselves (see ``QuickOpNode``).
    """
    nargs = len(args)
    edges, metas = [], []
    stored = list(args)
    any_grad = False
    for pos, saved, refused in plan.fast_slots:
        if pos < nargs:
            t = args[pos]
            if isinstance(t, Tensor):
                if t.requires_grad:
                    if refused is not None:
                        _refuse_argument(plan.op, refused)
                    if t._base is None:
                        fn = t.grad_fn
                        edges.append((fn, t._output_nr) if fn is not None else (grad_accumulator(t), 0))
                    else:
                        edges.append(views.edge(t))
                    any_grad = True
                else:
                    edges.append(_NO_EDGE)
                if saved:
                    if t._inference:
                        SavedTensor(t)  # raises PyTorch's error for inference tensors
                    metas.append(t._storage.version)
                else:
                    metas.append((t._shape, t.dtype, t.device, t._stride, t._offset))
                    stored[pos] = None
                continue
        edges.append(_NO_EDGE)
        metas.append(None)
    if not any_grad:
        return call_below(args, kwargs)
    node = _new_node(QuickOpNode)
    node.next_functions = tuple(edges)
    node.seq = next(_sequence)
    node.plan = plan
    node.args = stored
    node.inputs_meta = metas
    if anomaly.state.enabled:
        anomaly.remember(node)
    result = call_below(args, kwargs)
    if plan.saved_written:
        _resync_written(node, plan)
    if type(result) is not Tensor:
        return _mark_outputs(node, plan.entry, result, args, None)
    if result.dtype.category >= _FLOATING:
        for a in args:
            if result is a:
                break  # the op handed back its input itself: nothing to record
        else:
            result.grad_fn = node
            if result._base is not None:
                result._view_version = result._storage.version  # see views.edge
                if "_multi_view" in args[0].__dict__:
                    result._multi_view = (0, node)  # a view of such a view refuses in-place ops too
            result.requires_grad = True
    if plan.entry.saves_result:
        _save_result(node, (result,))
    return result


def _record_general(op, plan: _Plan, args: tuple, kwargs: dict, call_below):
    edges, metas, list_sizes = [], [], None
    any_grad = False
    nargs = len(args)
    for name, pos, is_list in plan.tensor_slots:
        value = args[pos] if 0 <= pos < nargs else kwargs.get(name)
        if is_list:
            items = list(value) if value is not None else []
            if list_sizes is None:
                list_sizes = {}
            list_sizes[name] = len(items)
        else:
            items = (value,)
        for t in items:
            if isinstance(t, Tensor):
                if t.requires_grad:
                    if name in plan.entry.refused:
                        _refuse_argument(op, name)
                    edges.append(views.edge(t))
                    any_grad = True
                else:
                    edges.append(_NO_EDGE)
                metas.append((t._shape, t.dtype, t.device, t._stride, t._offset))
            else:
                edges.append(_NO_EDGE)
                metas.append(None)
    if not any_grad:
        return call_below(args, kwargs)

    target = args[0] if plan.inplace else None
    if target is not None:
        _check_inplace_target(target)
    stored = list(args)
    stored_kw = dict(kwargs) if kwargs else {}
    saved_names = set()
    for name, pos in plan.saved_slots:
        value = args[pos] if 0 <= pos < nargs else kwargs.get(name)
        if isinstance(value, Tensor):
            value = SavedTensor(value.clone() if value is target else value)
        elif type(value) in (list, tuple) and any(isinstance(v, Tensor) for v in value):
            value = [SavedTensor(v) if isinstance(v, Tensor) else v for v in value]  # index lists hold None
        else:
            continue
        saved_names.add(name)
        if 0 <= pos < nargs:
            stored[pos] = value
        else:
            stored_kw[name] = value
    for name, pos, is_list in plan.tensor_slots:
        if name not in saved_names:
            value = stored[pos] if 0 <= pos < nargs else stored_kw.get(name)
            if is_list and value is not None:
                value = [None if isinstance(v, Tensor) else v for v in value]
            elif isinstance(value, Tensor):
                value = None
            if 0 <= pos < nargs:
                stored[pos] = value
            elif name in stored_kw:
                stored_kw[name] = value
    return _run_and_record(plan, args, kwargs, call_below, stored, stored_kw, edges, metas, list_sizes, target)


def _run_and_record(plan, args, kwargs, call_below, stored, stored_kw, edges, metas, list_sizes, target):
    entry = plan.entry
    node = OpNode(plan, stored, stored_kw, tuple(edges), metas, list_sizes)
    if anomaly.state.enabled:
        anomaly.remember(node)
    save_result = entry.saves_result
    if target is not None and target._base is not None:
        result = call_below(args, kwargs)
        views.rebase(target, node)
        if save_result:
            _save_result(node, (target,))
        return result

    gains_history = target is not None and not target.requires_grad
    result = call_below(args, kwargs)
    if plan.saved_written:
        _resync_written(node, plan)
    if type(result) is Tensor:
        if result.dtype.category >= _FLOATING and (target is not None or not _is_input(result, args)):
            result.grad_fn = node
            if target is not None:
                result._output_nr = 0
            elif result._base is not None:
                result._view_version = result._storage.version  # see views.edge
                if "_multi_view" in args[0].__dict__:
                    result._multi_view = (0, node)  # a view of such a view refuses in-place ops too
            result.requires_grad = True
        if save_result:
            _save_result(node, (result,))
    else:
        result = _mark_outputs(node, entry, result, args, target)
    if gains_history and target.requires_grad and target._views is not None:
        views.follow_base(target)  # the views taken before it required grad follow it, as in PyTorch
    return result


def _mark_outputs(node: OpNode, entry, result, args: tuple, target):
    """Give the outputs of a call that returned several (or a non-Tensor) their ``grad_fn``."""
    outputs = result if isinstance(result, tuple | list) else (result,)
    node.n_outputs = len(outputs)
    differentiable = entry.output_differentiable
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor) or out.dtype.category < _FLOATING:
            continue
        if differentiable is not None and not differentiable[i]:
            continue
        if target is None and _is_input(out, args):
            continue  # the op handed back its input itself: nothing to record
        out.grad_fn = node
        out._output_nr = i
        out.requires_grad = True
        if out._base is not None:
            out._view_version = out._storage.version
            if outputs is not result:
                # One view returned alone (by a tensor subclass): a multi-view only as its input is.
                if args and "_multi_view" in getattr(args[0], "__dict__", ()):
                    out._multi_view = (0, node)
            else:
                out._multi_view = (i, node)
    if entry.saves_result:
        _save_result(node, outputs)
    return result


def _resync_written(node: OpNode, plan: _Plan) -> None:
    """The version a written argument is checked against is the one the op's own write left."""
    if type(node) is QuickOpNode:
        written = {pos for _, pos in plan.saved_written}
        for i, pos in enumerate(plan.tensor_positions):
            if pos in written and type(node.inputs_meta[i]) is int:
                node.inputs_meta[i] = node.args[pos]._storage.version
        return
    for name, pos in plan.saved_written:
        value = node.args[pos] if 0 <= pos < len(node.args) else node.kwargs.get(name)
        if type(value) is SavedTensor:
            value._version = value._data._storage.version


def _is_input(out, args) -> bool:
    for a in args:  # noqa: SIM110  (a loop: any() over a generator costs a frame per call)
        if out is a:
            return True
    return False


def _save_result(node: OpNode, outputs) -> None:
    node.saved_result = [
        SavedTensor(o, is_output=o.grad_fn is node) if isinstance(o, Tensor) else None for o in outputs
    ]
