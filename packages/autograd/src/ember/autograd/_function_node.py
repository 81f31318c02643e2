"""The node of a custom ``Function``: its ``ctx`` in forward and its ``grad_fn`` in backward.

``prepare`` records what backward needs to know of the inputs before forward runs (which are
tensors, which need a gradient, their edges); ``wire_outputs`` gives the outputs their history
after it, following PyTorch's rules for inputs returned as-is, dirty inputs and non-differentiable
outputs, then saves what ``save_for_backward`` named. ``BackwardCFunction.apply`` is the engine's
entry in backward.
"""

from __future__ import annotations

import re
import warnings

from ember.autograd import anomaly, views
from ember.autograd.grad_mode import state
from ember.autograd.graph import Node, SavedTensor
from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function
from ember.core.tensor import Tensor

MISSING = object()

_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward."
)

_RETURNED_AS_IS_AND_SAVED = (
    "An input that has been returned as-is as output is being saved for backward. This is not supported if you "
    "override setup_context. You should return and save a view of the input instead, e.g. with x.view_as(x) or "
    "setup ctx inside the forward function itself."
)


_CUSTOM_VIEW_MODIFIED = (
    "Output {} of {} is a view and is being modified inplace. This view was created inside a custom Function (or "
    "because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom "
    "backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You "
    "can fix this by cloning the output of the custom Function."
)


class FunctionCtx:
    """What ``forward`` or ``setup_context`` tells ``backward``: saved tensors and marks on tensors."""

    def save_for_backward(self, *tensors) -> None:
        """Save tensors (or ``None``) for ``backward``, where ``ctx.saved_tensors`` gives them back."""
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Save tensors for ``jvp``, where ``ctx.saved_tensors`` gives them back."""
        for t in tensors:
            if not (isinstance(t, Tensor) or t is None):
                raise AssertionError(
                    "save_for_forward expects all arguments to be tensors; you should save non-tensors as "
                    "attributes on ctx."
                )
        self.saved_for_forward = tensors

    def mark_dirty(self, *args) -> None:
        """Declare the inputs that ``forward`` modified in place (they must be returned as outputs)."""
        self.dirty_tensors = args

    def mark_shared_storage(self, *pairs) -> None:
        warnings.warn(
            "mark_shared_storage is deprecated. Tensors with shared storages are automatically tracked. Note that "
            "calls to `set_()` are not tracked",
            DeprecationWarning,
            stacklevel=2,
        )

    def mark_non_differentiable(self, *args) -> None:
        """Declare outputs that carry no gradient; ``backward`` still gets a (zero) gradient for each."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether missing output gradients reach ``backward`` as zeros (default) or as ``None``."""
        self.materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """Base of the ``<Name>Backward`` classes; an instance is one call's ``ctx`` and ``grad_fn``."""

    _forward_cls: type
    # Per-call state, as class defaults: most calls set few of them.
    to_save = None
    saved_for_forward = None
    dirty_tensors = None
    non_differentiable = None
    materialize_grads = True
    needs_input_grad: tuple = ()
    _is_tensor_input: tuple = ()
    _input_meta: tuple = ()
    _output_meta: tuple = ()
    _nondiff_ids: frozenset = frozenset()
    _saved: list | None = None
    _freed = False
    _cleared_on_access = False
    _in_jvp = False
    n_outputs = 1

    def __init__(self) -> None:
        super().__init__(())

    @property
    def saved_tensors(self) -> tuple:
        if self._in_jvp and self.saved_for_forward is not None:
            return tuple(self.saved_for_forward)
        if self._cleared_on_access:
            raise RuntimeError(
                "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set on the "
                "autograd.Function. Either access saved_tensors only once, or set clear_saved_tensors_on_access=False."
            )
        if self._freed:
            raise RuntimeError(_BACKWARD_TWICE)
        saved = self._saved
        if saved is None:
            return ()
        out = tuple(s.unpack(self) if s is not None else None for s in saved)
        if self._forward_cls.clear_saved_tensors_on_access:
            # The Function promises one access: its saved tensors can go now rather than after backward.
            self._saved = None
            self._cleared_on_access = True
        return out

    @property
    def saved_variables(self) -> tuple:
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def _is_nondiff(self, t) -> bool:
        return id(t) in self._nondiff_ids

    def release(self) -> None:
        if self._saved is not None:
            for s in self._saved:
                if s is not None:
                    s.release()
            self._saved = None
            self._freed = True

    def _user_fn(self):
        from ember.autograd.function import Function

        cls = self._forward_cls
        if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
            raise RuntimeError(
                "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should only "
                "implement one of them."
            )
        return cls.vjp if cls.vjp is not Function.vjp else cls.backward

    def apply(self, grads: tuple) -> tuple:
        grads = list(grads) + [None] * (self.n_outputs - len(grads))
        if self.materialize_grads:
            for i, meta in enumerate(self._output_meta):
                if grads[i] is None and meta is not None:
                    grads[i] = zeros_function(meta[0], dtype=meta[1], device=meta[2])
        result = self._user_fn()(self, *grads)
        return self._check_result(result)

    def _check_result(self, result) -> tuple:
        result = result if isinstance(result, tuple) else (result,)
        n_inputs = len(self._is_tensor_input)
        if len(result) > n_inputs and all(r is None for r in result[n_inputs:]):
            result = result[:n_inputs]
        if len(result) != n_inputs:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected {n_inputs}, got "
                f"{len(result)})"
            )
        out = []
        for i, (g, is_tensor) in enumerate(zip(result, self._is_tensor_input, strict=True)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at position {i + 1}, but "
                        "the corresponding forward input was not a Variable"
                    )
                continue
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            out.append(g)
        return tuple(self._fit(k, g) for k, g in enumerate(out))

    def _fit(self, k: int, g):
        """The engine's checks of one gradient against its input: shape, then dtype."""
        if g is None or self.next_functions[k][0] is None:
            return None
        shape, dtype, _ = self._input_meta[k]
        if g._shape != shape:
            if not _expandable(shape, g._shape):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {k} - got {list(g._shape)} but "
                    f"expected shape compatible with {list(shape)}"
                )
            from ember.autograd.accumulate import sum_to

            g = sum_to(g, shape)
        if g.dtype is not dtype:
            g = g.to(dtype)
        return g


def _expandable(shape: tuple, to: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``to`` (so a gradient of shape ``to`` sums down to it)."""
    if len(shape) > len(to):
        return False
    return all(a in (b, 1) for a, b in zip(reversed(shape), reversed(to), strict=False))


def prepare(ctx: BackwardCFunction, args: tuple) -> bool:
    """Record the inputs' flags and edges on ``ctx``; whether the call records a node."""
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    needs = tuple(t and a.requires_grad for a, t in zip(args, is_tensor, strict=True))
    ctx.needs_input_grad = needs
    ctx._is_tensor_input = is_tensor
    executable = state.enabled and any(needs)
    if executable:
        tensors = [a for a, t in zip(args, is_tensor, strict=True) if t]
        ctx.next_functions = tuple(views.edge(a) if a.requires_grad else (None, 0) for a in tensors)
        ctx._input_meta = tuple((a._shape, a.dtype, a.device) for a in tensors)
        if anomaly.state.enabled:
            anomaly.remember(ctx)
    return executable


def _tensor_set(values, what: str) -> dict:
    out = {}
    for i, v in enumerate(values or ()):
        if not isinstance(v, Tensor):
            if what == "mark_dirty":
                raise RuntimeError(
                    f"mark_dirty can only accept variables, but argument {i} is of type {type(v).__name__}"
                )
            raise RuntimeError(f"mark_non_differentiable only accepts variable arguments, but got {type(v).__name__}")
        out[id(v)] = v
    return out


def _alias_no_grad(t: Tensor) -> Tensor:
    """``t.view_as(t)`` recorded by no one: an input returned as-is becomes a tensor of its own."""
    prev = state.enabled
    state.enabled = False
    try:
        return t.view_as(t)
    finally:
        state.enabled = prev


def wire_outputs(ctx: BackwardCFunction, args: tuple, raw, executable: bool, setup_context: bool):
    """Give forward's outputs their history; save what ``save_for_backward`` named; the outputs."""
    is_tuple = isinstance(raw, tuple)
    raw_outputs = raw if is_tuple else (raw,)
    nondiff = _tensor_set(ctx.non_differentiable, "mark_non_differentiable")
    dirty = _tensor_set(ctx.dirty_tensors, "mark_dirty")
    ctx.non_differentiable = ctx.dirty_tensors = None
    for t in dirty.values():
        t._bump_version()
    inputs = {id(a): k for k, a in enumerate(a for a in args if isinstance(a, Tensor))}
    to_save = ctx.to_save or ()
    saved_ids = set()
    if setup_context:
        saved_ids = {id(t) for t in (*to_save, *(ctx.saved_for_forward or ())) if isinstance(t, Tensor)}
    node = ctx if executable else None
    n = len(raw_outputs)
    outputs, metas = [], []
    for i, out in enumerate(raw_outputs):
        if not isinstance(out, Tensor):
            outputs.append(out)
            metas.append(None)
            continue
        is_input = id(out) in inputs
        is_dirty = id(out) in dirty
        differentiable = node is not None and id(out) not in nondiff and out.dtype.category >= D.FLOATING
        if not differentiable:
            if not out.requires_grad:
                if is_input and not is_dirty:
                    if id(out) in saved_ids:
                        raise RuntimeError(_RETURNED_AS_IS_AND_SAVED)
                    out = _alias_no_grad(out)
            elif is_input:
                out = out.detach()
            elif out._base is None:
                out.grad_fn = None
                out.requires_grad = False
        elif is_dirty:
            _rebase_dirty(ctx, out, i, n, is_input, inputs)
        else:
            if is_input:
                if id(out) in saved_ids:
                    raise RuntimeError(_RETURNED_AS_IS_AND_SAVED)
                out = _alias_no_grad(out)
            out.grad_fn = node
            out._output_nr = i
            out.requires_grad = True
            if out._base is not None:
                out._view_version = out._storage.version  # its history is current (views.edge)
        outputs.append(out)
        metas.append((out._shape, out.dtype, out.device) if executable else None)
    returned = {id(o) for o in raw_outputs}
    for key in dirty:
        if key not in returned:
            raise RuntimeError(
                "Some elements marked as dirty during the forward method were not returned as output. The inputs "
                "that are modified inplace must all be outputs of the Function."
            )
    if node is not None:
        _mark_views(ctx, raw_outputs, outputs, inputs, dirty)
    if executable:
        ctx.n_outputs = n
        ctx._output_meta = tuple(metas)
        ctx._nondiff_ids = frozenset(nondiff)
        _save(ctx, to_save, outputs)
    else:
        ctx._nondiff_ids = frozenset(nondiff)
    ctx.to_save = None
    return tuple(outputs) if is_tuple else outputs[0]


def _mark_views(ctx, raw_outputs: tuple, outputs: list, inputs: dict, dirty: dict) -> None:
    """Outputs that are views refuse in-place ops: rebasing their base would bypass the custom backward."""
    name = re.sub(r"Backward$", "", ctx.name())
    for i, (raw, out) in enumerate(zip(raw_outputs, outputs, strict=True)):
        if isinstance(out, Tensor) and out._base is not None and not (id(raw) in inputs and id(raw) in dirty):
            out._custom_view_error = _CUSTOM_VIEW_MODIFIED.format(i, name)


def _rebase_dirty(ctx, out: Tensor, i: int, n: int, is_input: bool, inputs: dict) -> None:
    if out.grad_fn is None and out.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    if not is_input:
        warnings.warn(
            "Only input Tensors should be given to ctx.mark_dirty(). If a Tensor is not an input, there is no need "
            "to pass it to mark_dirty().",
            UserWarning,
            stacklevel=4,
        )
    if out._base is not None:
        if n > 1:
            raise RuntimeError(
                "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot "
                "return more than one Tensor. This is not supported by the current autograd engine. You should "
                "either make sure the input is not a view (using .clone() for example) or make your Function only "
                "return one Tensor (potentially splitting it into two Functions: one doing the inplace that returns "
                "a single Tensor and a second one that does the other operations). You can ask on the forum "
                "https://discuss.pytorch.org/ if you need help to do this change."
            )
        k = inputs.get(id(out), 0)
        views.rebase(out, ctx if k == 0 else _InputFirst(ctx, k))
        return
    gains_history = not out.requires_grad
    out.grad_fn = ctx
    out._output_nr = i
    out.requires_grad = True
    if gains_history and out._views is not None:
        views.follow_base(out)  # its views taken before follow it, as in PyTorch


class _InputFirst(Node):
    """``fn`` seen with its ``k``-th input first: ``CopySlices`` takes the modified view as input 0."""

    def __init__(self, fn: Node, k: int) -> None:
        edges = fn.next_functions
        super().__init__((edges[k], *edges[:k], *edges[k + 1 :]))
        self.fn, self.k = fn, k

    def name(self) -> str:
        return self.fn.name()

    def release(self) -> None:
        self.fn.release()

    def apply(self, grads: tuple) -> tuple:
        out, k = self.fn.apply(grads), self.k
        return (out[k], *out[:k], *out[k + 1 :])


def _save(ctx: BackwardCFunction, to_save, outputs: list) -> None:
    if not to_save:
        return
    out_ids = {id(o) for o in outputs if isinstance(o, Tensor)}
    saved = []
    for i, t in enumerate(to_save):
        if t is None:
            saved.append(None)
        elif isinstance(t, Tensor):
            saved.append(SavedTensor(t, is_output=id(t) in out_ids and t.grad_fn is ctx))
        else:
            raise TypeError(
                f"save_for_backward can only save variables, but argument {i} is of type {type(t).__name__}"
            )
    ctx._saved = saved


class DelayedError(Node):
    """Stands for a backward that cannot be differentiated: reaching it in backward raises."""

    def __init__(self, message: str, n_outputs: int) -> None:
        super().__init__(())
        self.message = message
        self.n_outputs = n_outputs

    def apply(self, grads: tuple) -> tuple:
        raise RuntimeError(self.message)

    def wrap(self, i: int, t):
        if t is None:
            return None
        out = t.detach()
        out.grad_fn = self
        out._output_nr = i
        out.requires_grad = True
        return out
