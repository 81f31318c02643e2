"""The tangent of one op call: explicit rules, the derivative table's ``jvp=``, and transposition.

A rule takes ``tangents`` (one per tensor argument in schema order, None where that argument has no
tangent; a list for a ``Tensor[]``), the call's arguments by schema name (primals, without their
tangents) and ``result`` (the primal output), and returns the output's tangent (a tuple for several
outputs; None means zeros). Derivative entries' callable ``jvp=`` share that signature.

The kinds, in the order ``_forward_dispatch.Plan`` picks them:

- ``RULES``: explicit rules for the common products (mul, div, the matmul family, where) and for
  fills; used where the op has a derivative entry, so both modes cover the same ops.
- ``"linear"`` (and every view op): the op applied to the tangents, with zeros for floating-point
  arguments without one and the integer and boolean ones (indices, masks) kept.
- ``"elementwise"``: the entry's backward formula applied to the tangent, its Jacobian being
  diagonal; for complex inputs ``conj(formula(conj(t)))``, which is ``f'(z) t`` for the
  ``grad * conj(f'(z))`` formulas of holomorphic functions.
- ``transposed``: any other entry. A backward formula is linear in its incoming gradient ``u``:
  ``v = J^H u``. Running it on a dummy ``u`` that requires grad and differentiating ``<v, t>``
  with respect to ``u`` gives ``J t`` (reverse over reverse, as PyTorch does for ops without a
  forward formula). It runs the op once, through the autograd engine, so it handles every entry
  (lists, several outputs, broadcasting, in-place ops) with no per-op work.
"""

from __future__ import annotations

import math

from ember.autograd.derivatives.pointwise.pointwise_common import conj
from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.aten.pointwise.ternary import where_function
from ember.core.dispatch import ops
from ember.core.tensor import Tensor

aten = ops.aten
_DIFFERENTIABLE = (D.FLOATING, D.COMPLEX)


def _plus(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


# -- explicit rules -------------------------------------------------------------------------------


def _mul(tangents, self, other, **_):
    ts, to = tangents
    return _plus(ts * other if ts is not None else None, self * to if to is not None else None)


def _div_tangent(ts, to, self, other):
    a = ts / other if ts is not None else None
    b = -to * ((self / other) / other) if to is not None else None
    return _plus(a, b)


def _div(tangents, self, other, **_):
    return _div_tangent(*tangents, self, other)


def _div_mode(tangents, self, other, rounding_mode, result, **_):
    if rounding_mode is None:
        return _div_tangent(*tangents, self, other)
    return zeros_like(result)  # rounded quotients are piecewise constant


def _bilinear(product):
    """The rule of a product linear in each of its two operands: ``f(ta, b) + f(a, tb)``."""

    def rule(tangents, self, second, **_):
        ta, tb = tangents
        return _plus(product(ta, second) if ta is not None else None, product(self, tb) if tb is not None else None)

    return rule


def _named(rule, second: str):
    """Adapt ``rule(tangents, self, second)`` to an op whose second operand is named ``second``."""

    def adapted(tangents, self, **kw):
        return rule(tangents, self, kw[second])

    return adapted


def _addmm_like(product):
    """``beta * self + alpha * product(a, b)``."""

    def rule(tangents, self, beta, alpha, **kw):
        ts, t1, t2 = tangents
        first = kw["mat1"] if "mat1" in kw else kw["batch1"]
        second = kw["mat2"] if "mat2" in kw else kw["batch2"]
        prod = _plus(product(t1, second) if t1 is not None else None, product(first, t2) if t2 is not None else None)
        out = None
        if ts is not None and beta != 0:
            out = ts * beta if beta != 1 else ts
        if prod is not None:
            out = _plus(out, prod * alpha if alpha != 1 else prod)
        return out

    return rule


def _where(tangents, condition, self, other, **_):
    _, ts, to = tangents
    if ts is None and to is None:
        return None
    return where_function(condition, ts if ts is not None else 0.0, to if to is not None else 0.0)


def _or_zeros(tangent, like):
    return tangent if tangent is not None else zeros_like(like)


def _scatter_src(tangents, self, dim, index, src, **_):
    ts, _, tsrc = tangents
    return aten.scatter.src(_or_zeros(ts, self), dim, index, _or_zeros(tsrc, src))


def _scatter_value(tangents, self, dim, index, **_):
    return aten.scatter.value(tangents[0], dim, index, 0) if tangents[0] is not None else None


def _scatter_add(tangents, self, dim, index, src, **_):
    ts, _, tsrc = tangents
    return aten.scatter_add.default(_or_zeros(ts, self), dim, index, _or_zeros(tsrc, src))


def _zeros(tangents, result, **_):
    return zeros_like(result)


def _moment_dims(self, dim) -> tuple[list[int], int]:
    """The reduced dims of a moment (all for ``None`` or ``[]``) and how many elements each reduction sees."""
    if self.ndim == 0 or dim is None or (not isinstance(dim, int) and len(dim) == 0):
        dims = list(range(self.ndim))
    else:
        dims = sorted(d % self.ndim for d in ((dim,) if isinstance(dim, int) else dim))
    n = 1
    for d in dims:
        n *= self.shape[d]
    return dims, n


def _reduce(x, dims: list[int], keepdim: bool, how: str):
    if not dims:
        return getattr(x, how)()  # a 0-d tensor
    return getattr(x, how)(dims, keepdim=keepdim)


def _var_tangent(t, self, dim, correction, keepdim):
    """``d var = 2 / (N - correction) * sum((x - mean x) * t)`` over the reduced dims."""
    dims, n = _moment_dims(self, dim)
    c = 1.0 if correction is None else float(correction)
    centered = self - _reduce(self, dims, True, "mean")
    dof = n - c
    factor = 2.0 / dof if dof != 0 else math.inf
    product = (centered.conj() * t).real if centered.dtype.category == D.COMPLEX else centered * t
    return _reduce(product, dims, keepdim, "sum") * factor


def _std_tangent(t, self, dim, correction, keepdim, std):
    """``d std = d var / (2 std)``, zero where the deviation is zero (PyTorch's choice there)."""
    return where_function(std == 0, 0.0, _var_tangent(t, self, dim, correction, keepdim) / (std * 2))


def _var(tangents, self, dim, correction, keepdim, **_):
    return _var_tangent(tangents[0], self, dim, correction, keepdim)


def _std(tangents, self, dim, correction, keepdim, result, **_):
    return _std_tangent(tangents[0], self, dim, correction, keepdim, result)


def _var_mean(tangents, self, dim, correction, keepdim, **_):
    dims, _ = _moment_dims(self, dim)
    return _var_tangent(tangents[0], self, dim, correction, keepdim), _reduce(tangents[0], dims, keepdim, "mean")


def _std_mean(tangents, self, dim, correction, keepdim, result, **_):
    dims, _ = _moment_dims(self, dim)
    std = _std_tangent(tangents[0], self, dim, correction, keepdim, result[0])
    return std, _reduce(tangents[0], dims, keepdim, "mean")


RULES: dict = {
    aten.mul.Tensor: _mul,
    aten.div.Tensor: _div,
    aten.div.Tensor_mode: _div_mode,
    aten.mm.default: _named(_bilinear(lambda a, b: a.mm(b)), "mat2"),
    aten.bmm.default: _named(_bilinear(lambda a, b: a.bmm(b)), "mat2"),
    aten.mv.default: _named(_bilinear(lambda a, b: a.mv(b)), "vec"),
    aten.dot.default: _named(_bilinear(lambda a, b: a.dot(b)), "tensor"),
    aten.vdot.default: _named(_bilinear(lambda a, b: aten.vdot.default(a, b)), "other"),
    aten.addmm.default: _addmm_like(lambda a, b: a.mm(b)),
    aten.baddbmm.default: _addmm_like(lambda a, b: a.bmm(b)),
    aten.where.self: _where,
    aten.var.correction: _var,
    aten.std.correction: _std,
    aten.var_mean.correction: _var_mean,
    aten.std_mean.correction: _std_mean,
    aten.scatter.src: _scatter_src,
    aten.scatter.value: _scatter_value,
    aten.scatter_add.default: _scatter_add,
    aten.fill_.Scalar: _zeros,
    aten.zero_.default: _zeros,
}
# Rules of in-place ops apart from their functional op's (which ``Plan`` finds by itself).
INPLACE_RULES: dict = {}
# In-place comparisons write 0 or 1 into a floating-point target: its tangent becomes zeros, as in
# PyTorch (the functional comparisons give booleans, which carry none). Used although the ops are
# marked nondifferentiable.
_INPLACE_COMPARISONS = [
    getattr(getattr(aten, name), overload)
    for name in ("eq_", "ne_", "lt_", "le_", "gt_", "ge_")
    for overload in ("Tensor", "Scalar")
    if hasattr(aten, name) and overload in getattr(aten, name).overloads()
]
INPLACE_RULES.update(dict.fromkeys(_INPLACE_COMPARISONS, _zeros))
# Rules used even without a derivative entry, or in place of a nondifferentiable mark.
STANDALONE: frozenset = frozenset(_INPLACE_COMPARISONS)


# -- the table's kinds ----------------------------------------------------------------------------


def compute(plan, bound: dict, tangents: tuple, result):
    """The output tangent of a call whose plan is not ``transpose``."""
    kind = plan.kind
    if kind in ("linear", "view"):
        return _linear(plan, bound, tangents)
    if kind == "elementwise":
        return _elementwise(plan, bound, tangents, result)
    return plan.rule(tangents, result=result, **bound)


# Integer arguments of these names are part of a linear map (scatter's index, a mask), not its
# operands. Any other integer or boolean tensor is data whose tangent is zero (``copy_(ints)``).
_INDEX_ARGUMENTS = frozenset({"index", "indices", "mask"})


def _linear_operand(name: str, value, tangent, pointwise: bool, operand_list: bool):
    """What stands for one tensor argument when a linear op is applied to the tangents."""
    if isinstance(value, Tensor):
        if tangent is not None:
            return tangent
        if value.dtype.category not in _DIFFERENTIABLE and name in _INDEX_ARGUMENTS and not operand_list:
            return value  # an index or a mask: part of the linear map, not an operand
        # A pointwise op broadcasts a zero number as well as a tensor of zeros (the output tangent is
        # expanded to the output's shape afterwards); other ops need the tensor.
        return 0 if pointwise else zeros_like(value)
    if isinstance(value, bool) or not isinstance(value, int | float | complex):
        return value
    return 0  # a number in a tensor position is a constant: its tangent is zero


# A linear op's Scalar argument of these names is its constant term (a fill, a padding): the tangent
# gets zeros there. Multiplicative Scalars (``alpha``) are kept.
CONSTANT_TERMS = ("value", "fill_value")


def _linear(plan, bound: dict, tangents: tuple):
    values = dict(bound)
    pointwise = "pointwise" in plan.op.tags and not plan.inplace
    for (name, is_list), tangent in zip(plan.tensor_args, tangents, strict=True):
        value = bound.get(name)
        if is_list and value is not None:
            items = tangent if tangent is not None else [None] * len(value)
            operands = name != "indices"  # ``Tensor[] tensors`` of cat are operands, ``indices`` are not
            values[name] = [_linear_operand(name, v, t, pointwise, operands) for v, t in zip(value, items, strict=True)]
        else:
            values[name] = _linear_operand(name, value, tangent, pointwise, False)
    for name in plan.constant_terms:
        if not isinstance(values.get(name), Tensor):
            values[name] = 0
    if plan.inplace:
        first = plan.positional[0]
        target = bound[first]
        # The in-place op runs on the target's tangent itself (updated in place) or on fresh zeros.
        if tangents[0] is None and isinstance(target, Tensor):
            values[first] = zeros_like(target)
    return _call(plan, values)


def _call(plan, values: dict):
    positional = [values[name] for name in plan.positional]
    keywords = {k: v for k, v in values.items() if k not in plan.positional}
    return plan.op(*positional, **keywords)


def _elementwise(plan, bound: dict, tangents: tuple, result):
    tangent = tangents[0]
    if tangent is None:
        return None
    entry = plan.entry
    kw = dict(bound)
    kw.pop(plan.positional[0], None)
    primal = bound[plan.positional[0]]
    if entry.saves_result:
        kw["result"] = result
    if entry.wants_needs:
        kw["needs"] = (True,) * len(plan.tensor_args)
    if primal.dtype.category == D.COMPLEX:
        out = conj(entry.formula(conj(tangent), primal, **kw))
        return out.real if result.dtype.category != D.COMPLEX else out
    return entry.formula(tangent, primal, **kw)


# -- transposition ----------------------------------------------------------------------------------


def flat_outputs(out) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [o for v in out for o in flat_outputs(v)]
    return [None]


def _regroup(out, flat: list):
    """``flat`` (one value per output tensor) in ``out``'s structure."""
    if isinstance(out, Tensor):
        return flat.pop(0)
    items = [_regroup(o, flat) if isinstance(o, Tensor | tuple | list) else flat.pop(0) for o in out]
    if hasattr(out, "_fields"):
        return type(out)(*items)  # a named tuple of results (``return_types``)
    return type(out)(items)


def transposed(op, args: tuple, kwargs: dict, plan, bound: dict, tangents: tuple, *, inplace: bool):
    """``(primal output, output tangents)`` of an entry without a forward rule, by double backward."""
    from ember.autograd._forward_dispatch import set_tangent
    from ember.autograd.grad_mode import enable_grad, state
    from ember.autograd.graph import shallow

    outer = state.enabled and _any_requires_grad(args, kwargs)
    args, kwargs = list(args), dict(kwargs)
    tracked, tracked_tangents = [], []

    def track(x, t):
        if t is None or not isinstance(x, Tensor):
            return x
        if outer and x.requires_grad:
            # The primal output's history saves this alias: it keeps the tangent, for a backward run
            # inside the level (forward over reverse) to differentiate through it.
            y = aten.alias.default(x)
            set_tangent(y, t)
        else:
            y = shallow(x).requires_grad_(True)
        tracked.append(y)
        tracked_tangents.append(t)
        return y

    position = {name: i for i, name in enumerate(plan.positional)}
    # Arguments the entry does not differentiate (a loss's class weights, running statistics): their
    # tangents do not reach the output, as in PyTorch's formulas.
    refused = getattr(plan.entry, "refused", ())
    with enable_grad():
        for (name, is_list), tangent in zip(plan.tensor_args, tangents, strict=True):
            i = position.get(name, -1)
            value = args[i] if 0 <= i < len(args) else kwargs.get(name)
            if tangent is None or value is None or name in refused:
                continue
            if is_list:
                value = [track(v, t) for v, t in zip(value, tangent, strict=True)]
            else:
                value = track(value, tangent)
            if 0 <= i < len(args):
                args[i] = value
            else:
                kwargs[name] = value
        if inplace:
            args[0] = args[0].clone()  # the target was run already: the rule runs on a copy
        out = op(*args, **kwargs)
        flat = flat_outputs(out)
        chosen = [
            k
            for k, o in enumerate(flat)
            if isinstance(o, Tensor) and o.requires_grad and o.dtype.category in _DIFFERENTIABLE
        ]
        result_tangents = [None] * len(flat)
        if chosen:
            outs = [flat[k] for k in chosen]
            try:
                jvps = _double_backward(outs, tracked, tracked_tangents, outer)
            except (RuntimeError, NotImplementedError) as error:
                if outer or not _undifferentiable_formula(error):
                    raise
                jvps = _by_rows(op, outs, tracked, tracked_tangents, error)
            for k, j in zip(chosen, jvps, strict=True):
                result_tangents[k] = j
    if not outer and not inplace:
        # The primal output must not keep the tracking graph: a plain alias of each output.
        flat = [shallow(o) if isinstance(o, Tensor) and o.requires_grad else o for o in flat]
        out = _regroup(out, list(flat))
    if isinstance(out, Tensor):
        return out, result_tangents[0]
    return out, _regroup(list(out), result_tangents)


def _double_backward(outs: list, tracked: list, tangents: list, outer: bool) -> list:
    """``J t`` of each output: the backward formula run on dummy gradients ``u``, differentiated in ``u``."""
    from ember.autograd.functional_api import grad

    dummies = [zeros_like(o).requires_grad_(True) for o in outs]
    vjps = grad(outs, tracked, dummies, create_graph=True, allow_unused=True)
    pairs = [
        (v, t if t.dtype is v.dtype else t.to(v.dtype))
        for v, t in zip(vjps, tangents, strict=True)
        if v is not None and v.requires_grad
    ]
    if not pairs:
        return [None] * len(outs)
    return list(grad([v for v, _ in pairs], dummies, [t for _, t in pairs], create_graph=outer, allow_unused=True))


def _undifferentiable_formula(error: Exception) -> bool:
    """The backward formula ran but could not be differentiated (an op in it has no derivative yet)."""
    text = str(error)
    return "derivative for" in text and "is not implemented" in text


# One backward per output element: the fallback is for small outputs only.
ROWS_LIMIT = 4096


def _by_rows(op, outs: list, tracked: list, tangents: list, error: Exception) -> list:
    """``J t`` one element at a time: row ``k`` of ``J`` is the backward of the ``k``-th unit gradient.

    Used when the backward formula cannot be differentiated; it needs no second derivative (so also
    none of its special points), at the price of one backward pass per output element.
    """
    from ember.autograd.functional_api import grad

    total = sum(o.numel() for o in outs)
    if total > ROWS_LIMIT:
        raise NotImplementedError(
            f"forward AD of {op}: its backward formula cannot be differentiated ({error}), and computing the "
            f"tangent one backward per output element is limited to {ROWS_LIMIT} elements ({total} here)"
        ) from error
    results = []
    for out in outs:
        # Not differentiable any further (the fallback serves only where no outer graph needs it).
        column = zeros_function(out.numel(), dtype=out.dtype, device=out.device)
        for k in range(out.numel()):
            unit = zeros_function(out.numel(), dtype=out.dtype, device=out.device)
            unit[k] = 1.0
            rows = grad([out], tracked, [unit.reshape(out.shape)], retain_graph=True, allow_unused=True)
            value = None
            for row, t in zip(rows, tangents, strict=True):
                if row is not None:
                    row = row.conj() if row.dtype.category == D.COMPLEX else row
                    value = _plus(value, (row * t).sum())
            if value is not None:
                column[k] = value.item()
        results.append(column.reshape(out.shape))
    return results


def _any_requires_grad(args, kwargs) -> bool:
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and a.requires_grad:
            return True
        if type(a) in (list, tuple) and any(isinstance(b, Tensor) and b.requires_grad for b in a):
            return True
    return False
