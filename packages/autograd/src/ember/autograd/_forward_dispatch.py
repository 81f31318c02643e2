"""Forward AD at the dispatcher: the interposer that gives every op on dual tensors its tangent.

``forward_ad.enter_dual_level`` installs ``handle`` as an interposer (above autograd) and the exit
removes it, so the eager fast path pays nothing outside a level. For a call with no dual argument,
``handle`` passes straight down. Otherwise it runs the op below (autograd still records, so reverse
mode composes with forward mode) and computes the outputs' tangents from the op's rule
(``_forward_rules``). While a rule computes, the handler is *busy*: the ops a rule runs work on
primals and tangents as plain tensors, as PyTorch's forward formulas read primals without their
tangents.

A tangent lives on its tensor as ``_fw_grad = (level, tangent)``; an entry of a closed level means
nothing. Views of duals get views of the tangent, so an in-place op on a view, which updates the
view's tangent in place, updates its base's tangent too. A base may become dual after views of it were
made, by an in-place op: then those views, which have no entry of its own, read their tangents out of
the base's (only then: views made by code that sees no tangents, a rule's or a transform's, stay
without); tensors that must never do so (a primal from ``unpack_dual``, a ``detach``) carry an
explicit ``(level, None)``. Tangents are laid out like their primals (strides included) so that a view's
geometry applies to its base's tangent.
"""

from __future__ import annotations

import threading
import weakref

from ember.autograd import _forward_rules as rules
from ember.autograd import view_replay
from ember.autograd.registry import differentiable_decomposition, functional_of, is_nondifferentiable, lookup
from ember.core import dtypes as D
from ember.core.aten.factories.factories import empty_strided_function, zeros_like
from ember.core.dispatch import ops
from ember.core.layout import is_non_overlapping_and_dense
from ember.core.schema import _NO_DEFAULT
from ember.core.tensor import Tensor

_DIFFERENTIABLE = (D.FLOATING, D.COMPLEX)

# The class defaults: most tensors never carry a tangent, and reading a class attribute is cheap.
Tensor._fw_grad = None
# Set on a base that got its tangent from an in-place op, the one case where views made before
# (which have no tangent of their own) must read theirs out of the base's.
Tensor._fw_inplace = None


class Level:
    """One open forward AD level; tangents point at the level they belong to."""

    __slots__ = ("duals", "index")

    def __init__(self, index: int) -> None:
        self.index = index
        self.duals: weakref.WeakSet = weakref.WeakSet()  # the tensors given a tangent, to free them at exit

    def close(self) -> None:
        """Drop the tangents of this level from the tensors that outlive it (their memory, not their
        meaning: an entry of a closed level is ignored anyway, as on aliases made by autograd)."""
        for t in list(self.duals):
            entry = t.__dict__
            if entry.get("_fw_grad") is not None and entry["_fw_grad"][0] is self:
                del entry["_fw_grad"]
            entry.pop("_fw_inplace", None)
        self.duals.clear()


current: Level | None = None


class _Local(threading.local):
    busy = False


_local = _Local()


class busy:
    """Ops run inside see no tangents: a rule's own computations, and the primal op itself."""

    def __enter__(self) -> None:
        self.previous = _local.busy
        _local.busy = True

    def __exit__(self, *exc) -> None:
        _local.busy = self.previous


# -- tangents on tensors --------------------------------------------------------------------------


def tangent_of(t: Tensor) -> Tensor | None:
    """The tangent of ``t`` at the open level, or None."""
    fw = t._fw_grad
    if fw is not None and fw[0] is current:
        return fw[1]
    base = t._base
    if base is None or base._fw_inplace is not current or current is None:
        return None
    fw = base._fw_grad
    if fw is None or fw[0] is not current or fw[1] is None:
        return None
    tangent = _view_of_base_tangent(fw[1], base, t)
    set_tangent(t, tangent)
    return tangent


def _view_of_base_tangent(base_tangent: Tensor, base: Tensor, view: Tensor) -> Tensor:
    view_fn = view_replay.view_fn_of(view)
    if view_fn is not None:  # a batched view: its geometry does not locate it, its view ops do
        with busy():
            return view_fn(base_tangent)
    if base_tangent._stride != base._stride:
        raise RuntimeError(
            "forward AD: a view of a tensor whose tangent is laid out differently from it cannot read its tangent"
        )
    offset = base_tangent._offset + view._offset - base._offset
    with busy():
        return ops.aten.as_strided.default(base_tangent, view._shape, view._stride, offset)


def set_tangent(t: Tensor, tangent: Tensor | None) -> None:
    t._fw_grad = (current, tangent)
    if tangent is not None:
        current.duals.add(t)


def laid_out_like(tangent: Tensor, primal: Tensor) -> Tensor:
    """``tangent``, copied to ``primal``'s strides where those differ and ``primal`` is dense."""
    if tangent._stride == primal._stride or not is_non_overlapping_and_dense(primal._shape, primal._stride):
        return tangent
    with busy():
        out = empty_strided_function(primal._shape, primal._stride, dtype=tangent.dtype, device=tangent.device)
        out.copy_(tangent)
    return out


def primal_alias(t: Tensor) -> Tensor:
    """A view of ``t`` without its tangent (recorded by autograd, so reverse mode flows through it)."""
    with busy():
        out = ops.aten.alias.default(t)
    set_tangent(out, None)
    return out


def copy_tangent(src: Tensor, dst: Tensor) -> None:
    """Give ``dst`` the tangent of ``src`` (``ember.func`` re-wrapping an input it tracks)."""
    if current is not None:
        tangent = tangent_of(src)
        if tangent is not None:
            set_tangent(dst, tangent)


def _is_dual(t) -> bool:
    return isinstance(t, Tensor) and tangent_of(t) is not None


def _any_dual(args: tuple, kwargs: dict) -> bool:
    for a in args:
        if isinstance(a, Tensor):
            if tangent_of(a) is not None:
                return True
        elif type(a) in (list, tuple):
            for b in a:
                if isinstance(b, Tensor) and tangent_of(b) is not None:
                    return True
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, Tensor) and tangent_of(a) is not None:
                return True
    return False


# -- per-op plans ---------------------------------------------------------------------------------


class Plan:
    """How one op gets its tangent, decided once per op."""

    __slots__ = ("constant_terms", "defaults", "entry", "inplace", "kind", "op", "positional", "rule", "tensor_args")

    def __init__(self, op) -> None:
        schema = op.schema
        self.op = op
        self.positional = tuple(a.name for a in schema.arguments if not a.kwarg_only)
        self.defaults = {a.name: (a.default if a.default is not _NO_DEFAULT else None) for a in schema.arguments}
        self.tensor_args = tuple(
            (a.name, a.type.is_list)
            for a in schema.arguments
            if a.type.base == "Tensor" and not (a.is_write and a.kwarg_only)
        )
        self.inplace = schema.is_inplace or (bool(schema.arguments) and schema.arguments[0].is_write)
        self.entry = entry = lookup(op)
        self.rule = rules.RULES.get(op)
        if self.rule is None and self.inplace:
            self.rule = rules.INPLACE_RULES.get(op) or rules.RULES.get(functional_of(op))
        self.constant_terms = tuple(
            a.name for a in schema.arguments if a.type.base == "Scalar" and a.name in rules.CONSTANT_TERMS
        )
        if schema.is_out:
            self.kind = "out"
        elif self.rule is not None and op in rules.STANDALONE:
            self.kind = "rule"
        elif is_nondifferentiable(op):
            self.kind = "nondifferentiable"
        elif "view" in op.tags:
            self.kind = "view"  # views are linear: the op applied to the tangent gives a view of it
        elif self.rule is not None and (entry is not None or op in rules.STANDALONE):
            self.kind = "rule"
        elif entry is not None and entry.jvp is not None:
            self.kind = entry.jvp if isinstance(entry.jvp, str) else "callable"
            if self.kind == "callable":
                self.rule = entry.jvp
        elif entry is not None:
            self.kind = "transpose"
        elif op.decomposition is not None:
            self.kind = "decompose"
        else:
            self.kind = "missing"

    def bind(self, args: tuple, kwargs: dict) -> dict:
        bound = dict(self.defaults)
        bound.update(zip(self.positional, args, strict=False))
        if kwargs:
            bound.update(kwargs)
        return bound


_plans: dict = {}


def plan_of(op) -> Plan:
    plan = _plans.get(op)
    if plan is None:
        plan = _plans[op] = Plan(op)
    return plan


# -- the interposer -------------------------------------------------------------------------------


def handle(op, args: tuple, kwargs: dict, call_below):
    if _local.busy or not _any_dual(args, kwargs):
        return call_below(args, kwargs)
    plan = _plans.get(op) or plan_of(op)
    kind = plan.kind
    if kind == "decompose":
        return differentiable_decomposition(op)(*args, **kwargs)  # its ops carry the tangents
    if kind == "missing":
        return _without_rule(op, args, kwargs, call_below)
    if kind == "out":
        raise RuntimeError(
            f"{op.name}(): functions with out=... arguments don't support automatic differentiation, but one of the "
            "arguments has a forward gradient."
        )
    if kind == "nondifferentiable":
        with busy():
            out = call_below(args, kwargs)
        if not plan.inplace:  # an in-place one leaves its target's tangent as it was, as in PyTorch
            _mark_no_tangent(out)
        return out
    if plan.inplace:
        return _inplace(plan, args, kwargs, call_below)
    bound = plan.bind(args, kwargs)
    tangents = _tangents(plan, bound)
    with busy():
        if kind == "transpose":
            out, out_tangents = rules.transposed(op, args, kwargs, plan, bound, tangents, inplace=False)
        else:
            out = call_below(args, kwargs)
            out_tangents = rules.compute(plan, bound, tangents, out)
    _attach(out, out_tangents, args, kwargs, plan.entry.output_differentiable if plan.entry is not None else None)
    return out


def _without_rule(op, args: tuple, kwargs: dict, call_below):
    """An op with no entry: fine while its outputs are integers or booleans (indices, counts, masks),
    which carry no tangent; an error where a floating-point output would need one."""
    with busy():
        out = call_below(args, kwargs)
    if any(o.dtype.category in _DIFFERENTIABLE for o in rules.flat_outputs(out) if isinstance(o, Tensor)):
        raise NotImplementedError(
            f"Trying to use forward AD with {op.namespace}::{op.name} that does not support it because it has not "
            "been implemented yet."
        )
    return out


def _tangents(plan: Plan, bound: dict) -> tuple:
    """One tangent per tensor argument in schema order (a list for a ``Tensor[]``), None where none.

    Arguments the entry refuses (running statistics, class weights) are not differentiable: as in
    PyTorch, their tangents are ignored rather than refused, the output depending on their primals only.
    """
    out = []
    refused = plan.entry.refused if plan.entry is not None else ()
    for name, is_list in plan.tensor_args:
        value = bound.get(name)
        if name in refused:
            out.append(None)
        elif is_list:
            out.append(None if value is None else [tangent_of(v) if isinstance(v, Tensor) else None for v in value])
        else:
            out.append(tangent_of(value) if isinstance(value, Tensor) else None)
    return tuple(out)


def _mark_no_tangent(out) -> None:
    if isinstance(out, Tensor):
        if out._base is not None:
            set_tangent(out, None)
    elif isinstance(out, tuple | list):
        for o in out:
            _mark_no_tangent(o)


def _is_input(out: Tensor, args: tuple, kwargs: dict) -> bool:
    return any(out is a for a in args) or any(out is a for a in kwargs.values())


def _attach(out, tangents, args: tuple, kwargs: dict, differentiable: tuple | None = None) -> None:
    """Give each floating-point output its tangent (zeros where the rule gave none), except the outputs
    the entry's ``output_differentiable`` marks as not differentiable."""
    if isinstance(out, Tensor):
        _attach_one(out, tangents, args, kwargs)
        return
    if tangents is None:
        tangents = [None] * len(out)
    for k, (o, t) in enumerate(zip(out, tangents, strict=True)):
        if differentiable is not None and k < len(differentiable) and not differentiable[k]:
            _mark_no_tangent(o)
        elif isinstance(o, Tensor):
            _attach_one(o, t, args, kwargs)
        elif isinstance(o, list | tuple):
            _attach(o, t, args, kwargs)


def _attach_one(out: Tensor, tangent, args: tuple, kwargs: dict) -> None:
    if out.dtype.category not in _DIFFERENTIABLE:
        return
    if _is_input(out, args, kwargs):
        return  # the op handed back an input, which keeps its own tangent
    with busy():
        if tangent is None:
            tangent = zeros_like(out)
        else:
            tangent = _fit(tangent, out)
    if out._base is None:
        tangent = laid_out_like(tangent, out)
    set_tangent(out, tangent)
    _share_with_saved_result(out, tangent)


def _fit(tangent: Tensor, out: Tensor) -> Tensor:
    if tangent.dtype is not out.dtype:
        if tangent.dtype.category == D.COMPLEX and out.dtype.category != D.COMPLEX:
            tangent = tangent.real
        tangent = tangent.to(out.dtype)
    if tangent._shape != out._shape:
        tangent = tangent.expand(out._shape)
    return tangent


def _share_with_saved_result(out: Tensor, tangent: Tensor) -> None:
    """Autograd saved ``out`` (as an alias of it) before its tangent existed: give the alias the tangent
    too, so that a backward run inside this level (forward-over-reverse) differentiates through it."""
    node = out.grad_fn
    saved = getattr(node, "saved_result", None) if node is not None else None
    if not saved:
        return
    for s in saved:
        data = getattr(s, "_data", None)
        if (
            data is not None
            and data._storage is out._storage
            and (data._offset, data._shape, data._stride) == (out._offset, out._shape, out._stride)
        ):
            set_tangent(data, tangent)


# -- custom autograd.Functions ------------------------------------------------------------------


def function_handler(cls, args: tuple, kwargs: dict, run):
    """``Function.apply`` under a dual level: the Function's own ``jvp`` gives the output tangents.

    ``run`` applies the Function as in reverse mode; it runs busy, so the ops inside ``forward`` do
    not propagate tangents of their own (a Function's derivative is what its author says it is).
    """
    if _local.busy or not _any_dual(args, kwargs):
        return NotImplemented
    from ember.autograd.function import call_jvp

    tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    with busy():
        ctx, outputs = run(args, kwargs)
        out_tangents = call_jvp(ctx, args, tangents, outputs)
    many = isinstance(outputs, tuple)
    for o, t in zip(outputs if many else (outputs,), out_tangents, strict=True):
        if isinstance(o, Tensor) and t is not None and not _is_input(o, args, kwargs):
            with busy():
                t = _fit(t, o)
            set_tangent(o, laid_out_like(t, o) if o._base is None else t)
    return outputs


def function_hook():
    """``ember.autograd.function.set_forward_ad_handler``, where that module exists."""
    try:
        from ember.autograd import function
    except ImportError:
        return None
    return getattr(function, "set_forward_ad_handler", None)


# -- in-place ops ---------------------------------------------------------------------------------


def _inplace(plan: Plan, args: tuple, kwargs: dict, call_below):
    """Run the op on the primal, then update the target's tangent in place (or give it one)."""
    target = args[0]
    old_tangent = tangent_of(target)
    bound = plan.bind(args, kwargs)
    tangents = _tangents(plan, bound)
    with busy():
        old = target.clone() if plan.kind not in ("view", "linear") else target
        out = call_below(args, kwargs)
        bound = dict(bound)
        bound[plan.positional[0]] = old
        if plan.kind == "transpose":
            _, new = rules.transposed(plan.op, (old, *args[1:]), kwargs, plan, bound, tangents, inplace=True)
        else:
            new = rules.compute(plan, bound, tangents, target)
        if isinstance(new, tuple | list):
            new = new[0]
        if new is None:
            new = zeros_like(target)
        new = _fit(new, target)
        if old_tangent is not None:
            if new is not old_tangent:
                old_tangent.copy_(new)
            return out
    _give_tangent(target, new)
    return out


def _give_tangent(target: Tensor, tangent: Tensor) -> None:
    base = target._base
    if base is None:
        set_tangent(target, laid_out_like(tangent, target))
        target._fw_inplace = current
        return
    # A view without tangent whose base has none: the base gets zeros, the view its region of them.
    if view_replay.view_fn_of(target) is not None:
        # A batched view: zeros batched like the tangent (new_zeros), and the region found by replay.
        with busy():
            base_tangent = tangent.new_zeros(tuple(base._shape))
            set_tangent(base, base_tangent)
            base._fw_inplace = current
            view = _view_of_base_tangent(base_tangent, base, target)
            view.copy_(tangent)
        set_tangent(target, view)
        return
    with busy():
        if not is_non_overlapping_and_dense(base._shape, base._stride):
            raise RuntimeError("forward AD: an in-place op on a view of a base that is not dense is not supported")
        base_tangent = empty_strided_function(base._shape, base._stride, dtype=base.dtype, device=base.device)
        base_tangent.zero_()
        set_tangent(base, base_tangent)
        base._fw_inplace = current
        view = _view_of_base_tangent(base_tangent, base, target)
        view.copy_(tangent)
    set_tangent(target, view)


__all__ = ["busy", "copy_tangent", "handle", "primal_alias", "set_tangent", "tangent_of"]
