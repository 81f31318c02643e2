"""Pointwise ops of three operands: where, clamp (and clamp_min, clamp_max, clip), lerp, addcmul and
addcdiv.

They are ``define_pointwise`` ops with ``n_inputs=3``: all three operands broadcast together. Two
follow their own dtype rules: ``where`` promotes its values but not its condition (a callable rule),
and ``clamp`` leaves out a bound given as None (the plan skips None operands). Python numbers are
accepted in tensor positions, which covers PyTorch's Scalar overloads (``where.ScalarOther``...).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.indexing.masking import nonzero_function
from ember.core.aten.pointwise.unary import exact_out
from ember.core.bitselect import select
from ember.core.pointwise import as_compute, define_pointwise, expose, materialize, plan, unsupported
from ember.core.promotion import result_type
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor

# -- where ----------------------------------------------------------------------------------------


def _where_rule(inputs: tuple) -> tuple[D.dtype, D.dtype]:
    common = result_type(inputs[1], inputs[2])
    return common, D.float32 if common in (D.float16, D.bfloat16) else common


def _check_where(p, inputs, params) -> None:
    condition = inputs[0]
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not {type(condition).__name__}")
    if condition.dtype not in (D.bool_, D.uint8):  # uint8 conditions are deprecated but still accepted
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{D.SCALAR_TYPE_NAMES[condition.dtype]}"
        )


def _where(condition, a, b):
    return select(condition != 0, a, b)


where = define_pointwise(
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    _where,
    _where_rule,
    n_inputs=3,
    inplace=False,
    out_overload="self_out",
    check=_check_where,
    fast=False,
)


@where.functional.register_kernel("cpu")
def _where_cpu(condition, self, other) -> Tensor:
    """The plan's kernel, without casting the condition to the values' dtype first (a pass over
    the whole mask that ``condition != 0`` would only undo)."""
    p = plan(_where_rule, (condition, self, other))
    _check_where(p, (condition, self, other), {})
    mask = condition._require_data("compute")
    if mask.dtype != np.bool_:
        mask = mask != 0
    token = silence()
    try:
        result = select(mask, as_compute(self, p.compute), as_compute(other, p.compute))
    finally:
        restore(token)
    return materialize(result, p)


@public("where")
def where_function(condition, input=None, other=None, *, out: Tensor | None = None) -> Tensor:
    if input is None and other is None:
        return nonzero_function(condition, as_tuple=True)  # where(condition) is nonzero(condition, as_tuple=True)
    if out is None:
        return where.functional(condition, input, other)
    for position, (name, value) in enumerate((("input", input), ("other", other)), start=2):
        if not isinstance(value, Tensor):  # where.self_out takes tensors only
            raise TypeError(
                f"where(): argument '{name}' (position {position}) must be Tensor, not {type(value).__name__}"
            )
    return where.out(condition, input, other, out=out)


@method("where")
def _where_method(self, condition, other) -> Tensor:
    return where.functional(condition, self, other)


# -- clamp ----------------------------------------------------------------------------------------


def _check_clamp(name: str, needs_bound: bool, scalar_bounds: bool):
    def check(p, inputs, params) -> None:
        if needs_bound and inputs[1] is None and inputs[2] is None:
            raise RuntimeError(f"torch.{name}: At least one of 'min' or 'max' must not be None")
        if p.result.category == D.COMPLEX:
            raise NotImplementedError("clamp is not supported for complex types")
        # Bool tensors clamp by one bool tensor bound (as or / and), never by scalars or by two bounds.
        two_bounds = len(inputs) == 3 and inputs[1] is not None and inputs[2] is not None
        if p.result is D.bool_ and (scalar_bounds or two_bounds):
            raise unsupported(f"{name}_scalar" if scalar_bounds else name, p.result)

    return check


def _clamp(a, lo=None, hi=None):
    # maximum then minimum: a lower bound above the upper one gives the upper bound, and nan (in the
    # input or a bound) propagates, as in PyTorch.
    if lo is not None:
        a = np.maximum(a, lo)
    if hi is not None:
        a = np.minimum(a, hi)
    return a


clamp = define_pointwise(
    "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
    _clamp,
    n_inputs=3,
    check=_check_clamp("clamp", True, True),
    fast=False,
)
clamp_tensor = define_pointwise(
    "clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
    _clamp,
    n_inputs=3,
    out_overload="Tensor_out",
    check=_check_clamp("clamp", True, False),
    fast=False,
)
clamp_min = define_pointwise(
    "clamp_min(Tensor self, Scalar min) -> Tensor", np.maximum, n_inputs=2, check=_check_clamp("clamp_min", False, True)
)
clamp_min_tensor = define_pointwise(
    "clamp_min.Tensor(Tensor self, Tensor min) -> Tensor",
    np.maximum,
    n_inputs=2,
    out_overload="Tensor_out",
    check=_check_clamp("clamp_min", False, False),
)
clamp_max = define_pointwise(
    "clamp_max(Tensor self, Scalar max) -> Tensor", np.minimum, n_inputs=2, check=_check_clamp("clamp_max", False, True)
)
clamp_max_tensor = define_pointwise(
    "clamp_max.Tensor(Tensor self, Tensor max) -> Tensor",
    np.minimum,
    n_inputs=2,
    out_overload="Tensor_out",
    check=_check_clamp("clamp_max", False, False),
)


def _pick(scalar_ops, tensor_ops, *bounds):
    """The Tensor overload when a bound is a tensor.

    As in PyTorch's binding, a tensor mixed with a number selects the Scalar overload, which takes a
    0-dim tensor as a number (see ``_as_numbers``); any other mix is refused.
    """
    given = [b for b in bounds if b is not None]
    tensors = [isinstance(b, Tensor) for b in given]
    if not any(tensors):
        return scalar_ops
    if all(tensors):
        return tensor_ops
    if any(isinstance(b, Tensor) and b.ndim != 0 for b in given):
        kinds = ", ".join("Tensor" if isinstance(b, Tensor) else type(b).__name__ for b in given)
        raise TypeError(
            f"{scalar_ops.functional.name}() received an invalid combination of arguments - got (Tensor, {kinds}): "
            "bounds must be all tensors, or numbers and 0-dim tensors"
        )
    return scalar_ops


def _as_numbers(ops, bounds: tuple) -> tuple:
    if ops is clamp or ops is clamp_min or ops is clamp_max:
        return tuple(_number(b) if isinstance(b, Tensor) else b for b in bounds)
    return bounds


_PLACEHOLDERS = {D.BOOL: True, D.INTEGRAL: 1, D.FLOATING: 1.0, D.COMPLEX: 1j}


def _number(t: Tensor):
    # A tensor without data (meta) stands for a number of its kind: the result's dtype depends on that alone.
    return t.item() if t._array is not None else _PLACEHOLDERS[t.dtype.category]


def _clamp_function(input, min=None, max=None, *, out: Tensor | None = None) -> Tensor:
    ops = _pick(clamp, clamp_tensor, min, max)
    min, max = _as_numbers(ops, (min, max))
    return ops.functional(input, min, max) if out is None else ops.out(input, min, max, out=out)


def _clamp_method(self, min=None, max=None) -> Tensor:
    ops = _pick(clamp, clamp_tensor, min, max)
    return ops.functional(self, *_as_numbers(ops, (min, max)))


def _clamp_inplace(self, min=None, max=None) -> Tensor:
    ops = _pick(clamp, clamp_tensor, min, max)
    return ops.inplace(self, *_as_numbers(ops, (min, max)))


public("clamp", "clip")(_clamp_function)
method("clamp", "clip")(_clamp_method)
method("clamp_", "clip_")(_clamp_inplace)


def _one_bound(name: str, scalar_ops, tensor_ops) -> None:
    def function(input, bound, *, out: Tensor | None = None) -> Tensor:
        ops = _pick(scalar_ops, tensor_ops, bound)
        return ops.functional(input, bound) if out is None else ops.out(input, bound, out=out)

    def method_(self, bound) -> Tensor:
        return _pick(scalar_ops, tensor_ops, bound).functional(self, bound)

    def inplace(self, bound) -> Tensor:
        return _pick(scalar_ops, tensor_ops, bound).inplace(self, bound)

    function.__name__ = method_.__name__ = name
    public(name)(function)
    method(name)(method_)
    method(name + "_")(inplace)


_one_bound("clamp_min", clamp_min, clamp_min_tensor)
_one_bound("clamp_max", clamp_max, clamp_max_tensor)


# -- lerp -----------------------------------------------------------------------------------------


def _check_lerp(kernel: str):
    def check(p, inputs, params) -> None:
        start, end, weight = inputs
        for name, value in (("end", end), ("weight", weight)):
            # A 0-dim weight may differ (and promote); end and a weight with dimensions may not.
            if isinstance(value, Tensor) and value.dtype is not start.dtype and (name == "end" or value.ndim > 0):
                raise RuntimeError(
                    f"expected dtype {D.CPP_TYPE_NAMES[start.dtype]} for `{name}` but got dtype {D.CPP_TYPE_NAMES[value.dtype]}"
                )
        if p.result.category < D.FLOATING:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.SCALAR_TYPE_NAMES[p.result]}'")

    return check


def _self_dtype_rule(inputs: tuple) -> tuple[D.dtype, D.dtype]:
    """lerp.Scalar: the weight does not promote; the result has self's dtype."""
    d = inputs[0].dtype
    return d, D.float32 if d in (D.float16, D.bfloat16) else d


def _lerp(start, end, weight):
    # PyTorch's two-sided form: exact at weight 0 and at weight 1.
    diff = end - start
    return np.where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))


lerp = define_pointwise(
    "lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor",
    _lerp,
    _self_dtype_rule,
    n_inputs=3,
    out_overload="Scalar_out",
    check=_check_lerp("lerp_kernel_scalar"),
    fast=False,
)
lerp_tensor = define_pointwise(
    "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor",
    _lerp,
    n_inputs=3,
    out_overload="Tensor_out",
    check=_check_lerp("lerp_kernel_tensor"),
    fast=False,
)


def _lerp_ops(end, weight):
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not {type(end).__name__}")
    return _pick(lerp, lerp_tensor, weight)


@public("lerp")
def lerp_function(input, end, weight, *, out: Tensor | None = None) -> Tensor:
    ops = _lerp_ops(end, weight)
    return ops.functional(input, end, weight) if out is None else ops.out(input, end, weight, out=out)


@method("lerp")
def _lerp_method(self, end, weight) -> Tensor:
    return _lerp_ops(end, weight).functional(self, end, weight)


@method("lerp_")
def _lerp_inplace(self, end, weight) -> Tensor:
    return _lerp_ops(end, weight).inplace(self, end, weight)


# -- addcmul and addcdiv -------------------------------------------------------------------------


def _check_addcmul(p, inputs, params) -> None:
    if p.compute is D.bool_:
        raise unsupported("addcmul", p.compute)
    _check_value(p, params)


def _check_addcdiv(p, inputs, params) -> None:
    _self, t1, t2 = inputs
    if all(isinstance(t, Tensor) and t.dtype.category <= D.INTEGRAL for t in (t1, t2)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a "
            "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes."
        )
    _check_value(p, params)


def _check_value(p, params) -> None:
    if isinstance(params["value"], complex) and p.result.category < D.COMPLEX:
        raise RuntimeError(f"value cannot be converted to type {D.CPP_TYPE_NAMES[p.result]} without overflow")


def _value(value, like):
    return np.asarray(value).astype(np.result_type(like))


def _addcmul(a, t1, t2, *, value):
    return a + _value(value, t1) * t1 * t2


def _addcdiv(a, t1, t2, *, value):
    return a + _value(value, t1) * t1 / t2


addcmul = define_pointwise(
    "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
    _addcmul,
    n_inputs=3,
    check=_check_addcmul,
    fast=False,
)
addcdiv = define_pointwise(
    "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
    _addcdiv,
    n_inputs=3,
    check=_check_addcdiv,
    fast=False,
)
expose(addcmul, "addcmul", tensors_only=True)
expose(addcdiv, "addcdiv", tensors_only=True)


# -- out= dtypes ----------------------------------------------------------------------------------
# where and clamp (with Scalar bounds) refuse an out= tensor of another dtype, where other pointwise ops cast into it.


def _name(d: D.dtype) -> str:
    return D.SCALAR_TYPE_NAMES[d]


def _clamp_dtype(self, min=None, max=None):
    d = result_type(*(x for x in (self, min, max) if x is not None))
    return None if d.category == D.COMPLEX else d  # refused as complex before out= is looked at


exact_out(
    where,
    lambda condition, self, other: _where_rule((condition, self, other))[0],
    lambda want, got: f"Expected out type to be {_name(want)} but got {_name(got)}",
)
# Only the Scalar overloads: clamp.Tensor and friends cast into out= as other pointwise ops do.
for _ops in (clamp, clamp_min, clamp_max):
    exact_out(_ops, _clamp_dtype, lambda want, got: f"Found dtype {_name(got)} but expected {_name(want)}")
