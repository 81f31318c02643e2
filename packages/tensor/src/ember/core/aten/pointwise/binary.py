"""Binary pointwise ops: arithmetic, comparisons, logical and bitwise ops.

Each op takes tensors or Python scalars in its tensor positions (as PyTorch's dispatcher sees them
once wrapped numbers are unwrapped) and broadcasts. ``sub`` of bools, integer division by zero and
dtypes a kernel does not handle raise PyTorch's errors.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.pointwise.unary import reciprocal_function
from ember.core.fastpath import native
from ember.core.pointwise import define_pointwise, expose, unsupported
from ember.core.symbolic import SymBool, SymFloat, SymInt
from ember.core.tensor import Tensor


def _is_bool(x) -> bool:
    return (isinstance(x, Tensor) and x.dtype is D.bool_) or isinstance(x, bool)


def _check_alpha(p, inputs, params) -> None:
    alpha = params["alpha"]
    if p.result.category <= D.INTEGRAL and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if p.result is D.bool_ and not isinstance(alpha, bool) and alpha != 1:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")


def _add(a, b, *, alpha, out=None):
    if alpha == 1:
        return np.add(a, b, out=out)
    if type(b) is np.ndarray and (type(alpha) is float or type(alpha) is int):
        scale = b.dtype.type(alpha)  # alpha in b's dtype, as below, without the 0-d array
    else:
        scale = np.asarray(alpha).astype(np.result_type(b))
    return np.add(a, np.multiply(b, scale), out=out)


_add.writes_out = True  # takes ``out=``: the in-place fast path writes the target directly


def _check_sub(p, inputs, params) -> None:
    a, b = inputs
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    _check_alpha(p, inputs, params)


def _sub(a, b, *, alpha):
    if alpha == 1:
        return np.subtract(a, b)
    return np.subtract(a, np.multiply(b, np.asarray(alpha).astype(np.result_type(b))))


def _rsub(a, b, *, alpha):
    return _sub(b, a, alpha=alpha)


# A counter's ``+= 1`` (batch norm's num_batches_tracked) takes the in-place shortcut: both checks
# pass an int64 tensor with a Python int and the default alpha.
add = define_pointwise(
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    _add,
    n_inputs=2,
    check=_check_alpha,
    counts=True,
)
if native is not None:
    # An optimizer's ``p.add_(g, alpha=-lr)`` in C: the same bits, without the Python layers.
    add.inplace.register_kernel("cpu")(native.scaled_add(add.inplace.kernel("cpu"), D.float32, D.float64))
    # ``x + bias``: a bias repeated along the leading dimensions is a strided broadcast to NumPy.
    add.functional.register_kernel("cpu")(native.tensor_add(add.functional.kernel("cpu"), D.float32, D.float64))
sub = define_pointwise(
    "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    _sub,
    n_inputs=2,
    check=_check_sub,
    counts=True,
)
rsub = define_pointwise(
    "rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    _rsub,
    n_inputs=2,
    inplace=False,
    out_overload="Tensor_out",
    check=_check_sub,
)
mul = define_pointwise("mul.Tensor(Tensor self, Tensor other) -> Tensor", np.multiply, n_inputs=2)


# -- division ------------------------------------------------------------------------------------


def _int_zero_division(p, inputs, params=None) -> None:
    if p.compute.category > D.INTEGRAL:
        return
    divisor = inputs[1]
    if isinstance(divisor, Tensor):
        if divisor._array is None:  # meta tensors: the values are unknown, as in PyTorch
            return
        divisor = divisor._array
    if np.any(np.asarray(divisor) == 0):
        raise RuntimeError("ZeroDivisionError")


def _check_div(p, inputs, params) -> None:
    mode = params["rounding_mode"]
    if mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    if mode is not None and p.compute is D.bool_:
        raise unsupported(f"div_{mode}", p.compute)
    if mode is not None:
        _int_zero_division(p, inputs)


def _trunc_divide(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer) or np.result_type(a, b) == np.bool_:
        q = np.floor_divide(a, b)
        fix = (np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
        return q + fix.astype(q.dtype)
    return np.trunc(np.true_divide(a, b))


def _div(a, b, *, rounding_mode):
    if rounding_mode is None:
        return np.true_divide(a, b)
    if rounding_mode == "trunc":
        return _trunc_divide(a, b)
    return np.floor_divide(a, b)


# rounding_mode=None promotes ints to float; trunc and floor keep the promoted dtype. The schema
# is PyTorch's div.Tensor_mode; the plan's rule needs to know the mode, so the two dtype behaviours
# are two ops and ``div`` picks between them.
div = define_pointwise("div.Tensor(Tensor self, Tensor other) -> Tensor", np.true_divide, "int_to_float", n_inputs=2)
div_mode = define_pointwise(
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    _div,
    n_inputs=2,
    out_overload="out_mode",
    check=_check_div,
)


def _check_floor_divide(p, inputs, params) -> None:
    if p.compute is D.bool_:
        raise unsupported("div_floor", p.compute)
    _int_zero_division(p, inputs)


floor_divide = define_pointwise(
    "floor_divide(Tensor self, Tensor other) -> Tensor", np.floor_divide, n_inputs=2, check=_check_floor_divide
)


def _check_remainder(name: str):
    def check(p, inputs, params) -> None:
        if p.compute.category == D.COMPLEX or p.compute is D.bool_:
            raise unsupported(name, p.compute)
        _int_zero_division(p, inputs)

    return check


remainder = define_pointwise(
    "remainder.Tensor(Tensor self, Tensor other) -> Tensor",
    np.remainder,
    n_inputs=2,
    check=_check_remainder("remainder"),
)
fmod = define_pointwise(
    "fmod.Tensor(Tensor self, Tensor other) -> Tensor", np.fmod, n_inputs=2, check=_check_remainder("fmod")
)


# -- powers --------------------------------------------------------------------------------------


def _check_pow(p, inputs, params) -> None:
    _base, exponent = inputs
    if p.compute is D.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if p.compute.category <= D.INTEGRAL:
        values = exponent._array if isinstance(exponent, Tensor) else exponent
        if values is not None and np.any(np.asarray(values) < 0):
            raise RuntimeError("Integers to negative integer powers are not allowed.")


def _pow(a, b):
    return np.power(a, b)


pow_ = define_pointwise(
    "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
    _pow,
    n_inputs=2,
    out_overload="Tensor_Tensor_out",
    check=_check_pow,
)
pow_scalar = define_pointwise(
    "pow.Scalar(Scalar self, Tensor exponent) -> Tensor",
    _pow,
    n_inputs=2,
    inplace=False,
    out_overload="Scalar_out",
    check=_check_pow,
    contiguous=True,  # PyTorch's result for a number raised to a tensor, whatever the exponent's layout
)


# -- extrema and two-argument functions -------------------------------------------------------------


def _real_only(name: str):
    def check(p, inputs, params) -> None:
        if p.compute.category == D.COMPLEX:
            raise RuntimeError(f"{name} not implemented for complex tensors.")

    return check


maximum = define_pointwise(
    "maximum(Tensor self, Tensor other) -> Tensor", np.maximum, n_inputs=2, inplace=False, check=_real_only("maximum")
)
minimum = define_pointwise(
    "minimum(Tensor self, Tensor other) -> Tensor", np.minimum, n_inputs=2, inplace=False, check=_real_only("minimum")
)
fmax = define_pointwise(
    "fmax(Tensor self, Tensor other) -> Tensor", np.fmax, n_inputs=2, inplace=False, check=_real_only("fmax")
)
fmin = define_pointwise(
    "fmin(Tensor self, Tensor other) -> Tensor", np.fmin, n_inputs=2, inplace=False, check=_real_only("fmin")
)
atan2 = define_pointwise(
    "atan2(Tensor self, Tensor other) -> Tensor", np.arctan2, "int_to_float", n_inputs=2, check=_real_only("atan2")
)


def _check_hypot(p, inputs, params) -> None:
    if p.compute.category != D.FLOATING:
        raise unsupported("hypot", p.compute)


hypot = define_pointwise("hypot(Tensor self, Tensor other) -> Tensor", np.hypot, n_inputs=2, check=_check_hypot)


def _floats_only(name: str):
    def check(p, inputs, params) -> None:
        if p.compute.category != D.FLOATING:
            raise unsupported(name, p.compute)

    return check


NOT_CORE = ("pointwise",)  # PyTorch's core set leaves these out: pointwise/lowerings.py decomposes them
logaddexp = define_pointwise(
    "logaddexp(Tensor self, Tensor other) -> Tensor",
    np.logaddexp,
    n_inputs=2,
    inplace=False,
    check=_floats_only("logaddexp"),
    tags=NOT_CORE,
)
logaddexp2 = define_pointwise(
    "logaddexp2(Tensor self, Tensor other) -> Tensor",
    np.logaddexp2,
    n_inputs=2,
    inplace=False,
    check=_floats_only("logaddexp2"),
    tags=NOT_CORE,
)
copysign = define_pointwise(
    "copysign.Tensor(Tensor self, Tensor other) -> Tensor",
    np.copysign,
    "int_to_float",
    n_inputs=2,
    check=_real_only("copysign"),
    tags=NOT_CORE,
)


def _heaviside(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    # 0 below zero, 1 above, ``values`` at zero; nan is neither above zero nor zero, so 0.
    return np.where(x == 0, values, x > 0).astype(np.result_type(x, values))


def _check_heaviside(p, inputs, params) -> None:
    if p.compute.category == D.COMPLEX:
        raise unsupported("heaviside", p.compute)
    dtypes = [x.dtype for x in inputs if isinstance(x, Tensor)]
    if len(set(dtypes)) > 1:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


heaviside = define_pointwise(
    "heaviside(Tensor self, Tensor values) -> Tensor",
    _heaviside,
    n_inputs=2,
    check=_check_heaviside,
    fast=False,
    tags=NOT_CORE,
)


# -- comparisons and logic -------------------------------------------------------------------------


def _ordered(name: str):
    def check(p, inputs, params) -> None:
        if p.compute.category == D.COMPLEX:
            raise unsupported(name, p.compute)

    return check


def _comparison(name: str, fn, ordered: bool):
    return define_pointwise(
        f"{name}.Tensor(Tensor self, Tensor other) -> Tensor",
        fn,
        "bool",
        n_inputs=2,
        check=_ordered(name) if ordered else None,
    )


eq = _comparison("eq", np.equal, False)
ne = _comparison("ne", np.not_equal, False)
lt = _comparison("lt", np.less, True)
le = _comparison("le", np.less_equal, True)
gt = _comparison("gt", np.greater, True)
ge = _comparison("ge", np.greater_equal, True)

logical_and = define_pointwise("logical_and(Tensor self, Tensor other) -> Tensor", np.logical_and, "bool", n_inputs=2)
logical_or = define_pointwise("logical_or(Tensor self, Tensor other) -> Tensor", np.logical_or, "bool", n_inputs=2)
logical_xor = define_pointwise("logical_xor(Tensor self, Tensor other) -> Tensor", np.logical_xor, "bool", n_inputs=2)


def _integral_only(name: str):
    def check(p, inputs, params) -> None:
        if p.compute.category > D.INTEGRAL:
            raise unsupported(name, p.compute)

    return check


def _shift(fn, bits_fill):
    def compute(a, b):
        a, b = np.asarray(a), np.asarray(b)
        bits = a.dtype.itemsize * 8
        b = b.astype(a.dtype)
        over = (b < 0) | (b >= bits)
        safe = np.where(over, 0, b)
        return np.where(over, bits_fill(a), fn(a, safe))

    return compute


bitwise_and = define_pointwise(
    "bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor",
    np.bitwise_and,
    n_inputs=2,
    check=_integral_only("bitwise_and"),
)
bitwise_or = define_pointwise(
    "bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor",
    np.bitwise_or,
    n_inputs=2,
    check=_integral_only("bitwise_or"),
)
bitwise_xor = define_pointwise(
    "bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor",
    np.bitwise_xor,
    n_inputs=2,
    check=_integral_only("bitwise_xor"),
)
bitwise_left_shift = define_pointwise(
    "bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor",
    _shift(np.left_shift, lambda a: np.zeros_like(a)),
    n_inputs=2,
    out_overload="Tensor_out",
    check=_integral_only("lshift"),
)
bitwise_right_shift = define_pointwise(
    "bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor",
    _shift(np.right_shift, lambda a: np.where(a < 0, -1, 0).astype(a.dtype)),
    n_inputs=2,
    out_overload="Tensor_out",
    check=_integral_only("rshift"),
)


for _ops, _name in [
    (add, "add"),
    (sub, "sub"),
    (mul, "mul"),
    (floor_divide, "floor_divide"),
    (remainder, "remainder"),
    (fmod, "fmod"),
    (eq, "eq"),
    (ne, "ne"),
    (lt, "lt"),
    (le, "le"),
    (gt, "gt"),
    (ge, "ge"),
    (bitwise_and, "bitwise_and"),
    (bitwise_or, "bitwise_or"),
    (bitwise_xor, "bitwise_xor"),
    (bitwise_left_shift, "bitwise_left_shift"),
    (bitwise_right_shift, "bitwise_right_shift"),
]:
    expose(_ops, _name)
expose(rsub, "rsub", method=False, out=False)  # torch.rsub takes no out=, though the op has an out form
maximum_function = expose(maximum, "maximum", tensors_only=True)
for _ops, _name in [
    (minimum, "minimum"),
    (fmax, "fmax"),
    (fmin, "fmin"),
    (atan2, "atan2"),
    (hypot, "hypot"),
    (logaddexp, "logaddexp"),
    (logaddexp2, "logaddexp2"),
    (heaviside, "heaviside"),
    (logical_and, "logical_and"),
    (logical_or, "logical_or"),
    (logical_xor, "logical_xor"),
]:
    expose(_ops, _name, tensors_only=True)

# PyTorch's other spellings.
for _alias, _target in [
    ("subtract", sub),
    ("multiply", mul),
    ("greater", gt),
    ("greater_equal", ge),
    ("less", lt),
    ("less_equal", le),
    ("not_equal", ne),
]:
    expose(_target, _alias)
expose(atan2, "arctan2", tensors_only=True)
expose(copysign, "copysign")


@public("div", "divide", "true_divide")
def div_function(input, other, *, rounding_mode: str | None = None, out: Tensor | None = None) -> Tensor:
    if out is not None:
        if rounding_mode is None:
            return div.out(input, other, out=out)
        return div_mode.out(input, other, rounding_mode=rounding_mode, out=out)
    if rounding_mode is None:
        return div.functional(input, other)
    return div_mode.functional(input, other, rounding_mode=rounding_mode)


@method("div", "divide", "true_divide")
def _div_method(self, other, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None:
        return div.functional(self, other)
    return div_mode.functional(self, other, rounding_mode=rounding_mode)


@method("div_", "divide_", "true_divide_")
def _div_inplace(self, other, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None:
        return div.inplace(self, other)
    return div_mode.inplace(self, other, rounding_mode=rounding_mode)


@public("pow")
def pow_function(input, exponent, *, out: Tensor | None = None) -> Tensor:
    if isinstance(input, Tensor):
        return pow_.functional(input, exponent) if out is None else pow_.out(input, exponent, out=out)
    return pow_scalar.functional(input, exponent) if out is None else pow_scalar.out(input, exponent, out=out)


@method("pow", "__pow__")
def _pow_method(self, exponent) -> Tensor:
    return pow_.functional(self, exponent)


@method("pow_", "__ipow__")
def _pow_inplace(self, exponent) -> Tensor:
    return pow_.inplace(self, exponent)


@method("__rpow__")
def _rpow(self, base) -> Tensor:
    return pow_scalar.functional(base, self)


# -- operators -----------------------------------------------------------------------------------

_OPERATORS = {
    "__add__": add.functional,
    "__radd__": add.functional,
    "__iadd__": add.inplace,
    "__sub__": sub.functional,
    "__isub__": sub.inplace,
    "__mul__": mul.functional,
    "__rmul__": mul.functional,
    "__imul__": mul.inplace,
    "__truediv__": div.functional,
    "__itruediv__": div.inplace,
    "__floordiv__": floor_divide.functional,
    "__ifloordiv__": floor_divide.inplace,
    "__mod__": remainder.functional,
    "__imod__": remainder.inplace,
    "__eq__": eq.functional,
    "__ne__": ne.functional,
    "__lt__": lt.functional,
    "__le__": le.functional,
    "__gt__": gt.functional,
    "__ge__": ge.functional,
    "__and__": bitwise_and.functional,
    "__rand__": bitwise_and.functional,
    "__iand__": bitwise_and.inplace,
    "__or__": bitwise_or.functional,
    "__ror__": bitwise_or.functional,
    "__ior__": bitwise_or.inplace,
    "__xor__": bitwise_xor.functional,
    "__rxor__": bitwise_xor.functional,
    "__ixor__": bitwise_xor.inplace,
    "__lshift__": bitwise_left_shift.functional,
    "__ilshift__": bitwise_left_shift.inplace,
    "__rshift__": bitwise_right_shift.functional,
    "__irshift__": bitwise_right_shift.inplace,
}


# What an operator takes besides a tensor: numbers, symbolic ones included (a tuple made once).
_OPERANDS = (Tensor, bool, int, float, complex, SymInt, SymFloat, SymBool)


def _operator(op, name):
    def call(self, other):
        if not isinstance(other, _OPERANDS):
            return NotImplemented
        return op(self, other)

    call.__name__ = call.__qualname__ = name
    return call


for _name, _op in _OPERATORS.items():
    method(_name)(_operator(_op, _name))


@method("__rsub__")
def _rsub_operator(self, other) -> Tensor:
    return rsub.functional(self, other)


@method("__rtruediv__", "__rdiv__")
def _rtruediv(self, other) -> Tensor:
    # PyTorch computes other / self as reciprocal(self) * other; the rounding follows suit.
    return mul.functional(reciprocal_function(self), other)


@method("__rfloordiv__")
def _rfloordiv(self, other) -> Tensor:
    return floor_divide.functional(other, self)


@method("__rmod__")
def _rmod(self, other) -> Tensor:
    return remainder.functional(other, self)
