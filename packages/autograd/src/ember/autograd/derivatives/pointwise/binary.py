"""Derivatives of the binary pointwise ops (``ember.core.aten.pointwise.binary``).

Either operand may be a Python number (the ops take numbers in tensor positions, as PyTorch's
Scalar overloads do): a number gets no gradient, and a formula that reads it uses it as a number,
which is how PyTorch's ``pow.Tensor_Scalar`` and ``pow.Scalar`` formulas differ from the tensor one.

Special points follow PyTorch: ``maximum``/``minimum`` split a tie in half, ``fmax``/``fmin`` send
the gradient to the operand they return, ``pow`` gives zero for a zero exponent and for a zero base
under a non-negative exponent. Division with a rounding mode passes zeros; ``floor_divide``, and
``remainder`` with a number as dividend, record a node whose backward raises, as PyTorch's do.
Comparisons and logical and bitwise ops are not differentiable.
"""

from __future__ import annotations

import cmath
import math

from ember.autograd.derivatives.pointwise.pointwise_common import conj, not_implemented, where, zeros
from ember.autograd.registry import derivative, nondifferentiable
from ember.core import dtypes as D
from ember.core.aten.pointwise.binary import div_function
from ember.core.dispatch import ops
from ember.core.promotion import result_type
from ember.core.tensor import Tensor

aten = ops.aten


def _scaled(grad, alpha):
    return grad if alpha == 1 else grad * conj(alpha)


@derivative(aten.add.Tensor, jvp="linear")
def _add(grad, self, other, alpha, needs, **_):
    return (grad if needs[0] else None), (_scaled(grad, alpha) if needs[1] else None)


@derivative(aten.sub.Tensor, jvp="linear")
def _sub(grad, self, other, alpha, needs, **_):
    return (grad if needs[0] else None), (_scaled(-grad, alpha) if needs[1] else None)


@derivative(aten.rsub.Tensor, jvp="linear")
def _rsub(grad, self, other, alpha, needs, **_):
    return (_scaled(-grad, alpha) if needs[0] else None), (grad if needs[1] else None)


@derivative(aten.mul.Tensor, save=("self", "other"))
def _mul(grad, self, other, needs, **_):
    return (grad * conj(other) if needs[0] else None), (grad * conj(self) if needs[1] else None)


def _div_grads(grad, self, other, needs):
    g_self = grad / conj(other) if needs[0] else None
    g_other = -grad * conj((self / other) / other) if needs[1] else None
    return g_self, g_other


@derivative(aten.div.Tensor, save=("self", "other"))
def _div(grad, self, other, needs, **_):
    return _div_grads(grad, self, other, needs)


@derivative(aten.div.Tensor_mode, save=("self", "other"))
def _div_mode(grad, self, other, rounding_mode, needs, **_):
    if rounding_mode is None:
        return _div_grads(grad, self, other, needs)
    # Rounded quotients are piecewise constant.
    return (zeros(grad) if needs[0] else None), (zeros(grad) if needs[1] else None)


@derivative(aten.floor_divide.default)
def _floor_divide(grad, self, other, **_):
    not_implemented("floor_divide")


@derivative(aten.remainder.Tensor, save=("self", "other"))
def _remainder(grad, self, other, needs, **_):
    if not isinstance(self, Tensor):
        not_implemented("remainder")  # PyTorch's remainder.Scalar_Tensor has no derivative
    g_other = -grad * div_function(self, other, rounding_mode="floor") if needs[1] else None
    return (grad if needs[0] else None), g_other


@derivative(aten.fmod.Tensor, save=("self", "other"))
def _fmod(grad, self, other, needs, **_):
    g_other = -grad * div_function(self, other, rounding_mode="trunc") if needs[1] else None
    return (grad if needs[0] else None), g_other


# -- powers --------------------------------------------------------------------------------------


def _nonnegative(exponent):
    """Where the exponent is a non-negative real (complex ones: a zero imaginary part)."""
    if exponent.dtype.category == D.COMPLEX:
        return (exponent.imag == 0).logical_and(exponent.real >= 0)
    return exponent >= 0


def _pow_self_by_number(grad, self, exponent):
    """PyTorch's ``pow.Tensor_Scalar`` formula: the exponent is a number."""
    if exponent == 0:
        return zeros(self)
    e = complex(exponent) if isinstance(exponent, complex) else float(exponent)
    return grad * conj(e * self.pow(e - 1))


@derivative(aten.pow.Tensor_Tensor, save=("self", "exponent", "result"))
def _pow(grad, self, exponent, result, needs, **_):
    if not isinstance(exponent, Tensor):
        return _pow_self_by_number(grad, self, exponent), None
    if not isinstance(self, Tensor):
        return None, _pow_scalar(grad, self, exponent, result)
    g_self = g_exponent = None
    if needs[0]:
        g_self = where(exponent == 0.0, 0.0, grad * conj(exponent * self.pow(exponent - 1)))
    if needs[1]:
        base = self.to(result_type(self, exponent))
        log_term = result * base.log()
        g_exponent = grad * conj(where(_nonnegative(exponent).logical_and(base == 0), 0.0, log_term))
    return g_self, g_exponent


def _log_of_number(x):
    if isinstance(x, complex):
        return cmath.log(x) if x != 0 else complex(-math.inf, 0.0)
    x = float(x)
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


@derivative(aten.pow.Scalar, save=("self", "exponent", "result"))
def _pow_scalar(grad, self, exponent, result, **_):
    base = complex(self) if exponent.dtype.category == D.COMPLEX else self
    log_term = conj(result * _log_of_number(base))
    if self == 0:
        return grad * where(_nonnegative(exponent), 0.0, log_term)
    return grad * log_term


# -- extrema and two-argument functions -------------------------------------------------------------


@derivative(aten.maximum.default, save=("self", "other"))
def _maximum(grad, self, other, needs, **_):
    tie = where(self == other, grad / 2, grad)
    return (where(self < other, 0.0, tie) if needs[0] else None), (where(self > other, 0.0, tie) if needs[1] else None)


@derivative(aten.minimum.default, save=("self", "other"))
def _minimum(grad, self, other, needs, **_):
    tie = where(self == other, grad / 2, grad)
    return (where(self > other, 0.0, tie) if needs[0] else None), (where(self < other, 0.0, tie) if needs[1] else None)


def _fextremum(grad, picks_self, needs):
    """fmax/fmin: the gradient goes to the operand returned (self on ties and when other is nan)."""
    return (where(picks_self, grad, 0.0) if needs[0] else None), (where(picks_self, 0.0, grad) if needs[1] else None)


def _isnan(x):
    return x.isnan() if isinstance(x, Tensor) else x != x


@derivative(aten.fmax.default, save=("self", "other"))
def _fmax(grad, self, other, needs, **_):
    return _fextremum(grad, aten.logical_or.default(self >= other, _isnan(other)), needs)


@derivative(aten.fmin.default, save=("self", "other"))
def _fmin(grad, self, other, needs, **_):
    return _fextremum(grad, aten.logical_or.default(self <= other, _isnan(other)), needs)


@derivative(aten.atan2.default, save=("self", "other"))
def _atan2(grad, self, other, needs, **_):
    denominator = self * self + other * other
    recip = where(denominator == 0, 0.0, denominator.reciprocal())  # zero, not nan, at the origin
    return (grad * other * recip if needs[0] else None), (grad * -self * recip if needs[1] else None)


@derivative(aten.hypot.default, save=("self", "other", "result"))
def _hypot(grad, self, other, result, needs, **_):
    return (grad * self / result if needs[0] else None), (grad * other / result if needs[1] else None)


nondifferentiable(
    aten.eq.Tensor,
    aten.ne.Tensor,
    aten.lt.Tensor,
    aten.le.Tensor,
    aten.gt.Tensor,
    aten.ge.Tensor,
    aten.logical_and.default,
    aten.logical_or.default,
    aten.logical_xor.default,
    aten.bitwise_and.Tensor,
    aten.bitwise_or.Tensor,
    aten.bitwise_xor.Tensor,
    aten.bitwise_left_shift.Tensor,
    aten.bitwise_right_shift.Tensor,
)


@derivative(aten.logaddexp.default, save=("self", "other"))
def _logaddexp(grad, self, other, needs, **_):
    return (
        (grad / (1 + (other - self).exp()) if needs[0] else None),
        (grad / (1 + (self - other).exp()) if needs[1] else None),
    )


@derivative(aten.logaddexp2.default, save=("self", "other"))
def _logaddexp2(grad, self, other, needs, **_):
    return (
        (grad / (1 + (other - self).exp2()) if needs[0] else None),
        (grad / (1 + (self - other).exp2()) if needs[1] else None),
    )


@derivative(aten.copysign.Tensor, save=("self", "result"))
def _copysign(grad, self, result, needs, **_):
    # d/dself is the sign ratio (0 where self is 0); the sign source gets a zero gradient.
    ratio = where(self == 0, 0.0, result / self)
    return (grad * ratio if needs[0] else None), (zeros(grad) if needs[1] else None)


@derivative(aten.heaviside.default)
def _heaviside(grad, **_):
    not_implemented("heaviside")
