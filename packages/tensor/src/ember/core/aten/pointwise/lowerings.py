"""Decompositions of pointwise ops into core ops (see ``ember.core.aten.lowering``).

Each is the op's definition in terms of simpler pointwise ops; they may round at other steps than
the kernel does, which the lowering tests allow for against a float64 reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ember.core import dtypes as D
from ember.core.aten.lowering import lowered
from ember.core.aten.pointwise import binary, gelu, ternary, threshold_backward, unary
from ember.core.dispatch import ops
from ember.core.dtype_info import finfo
from ember.core.pointwise import PointwiseOps
from ember.core.tensor import Tensor

aten = ops.aten


def pointwise(family: PointwiseOps) -> Callable[[Callable], Callable]:
    """Register the decorated function as the decomposition of ``family.functional``, run as the
    kernel runs: after the op's checks, on its inputs converted to the op's compute dtype (float32
    for 16-bit floats, the promoted dtype for mixed ones), its result converted to the result dtype."""

    def register(fn: Callable) -> Callable:
        def decomposition(*args, **kwargs):
            p, _, _ = family.check(args, kwargs)
            if p.compute.category == D.FLOATING:
                args = tuple(_as(a, p.compute) for a in args)
                kwargs = {k: _as(v, p.compute) for k, v in kwargs.items()}
            return _as(fn(*args, **kwargs), p.result)

        lowered(family.functional)(decomposition)
        return fn

    return register


def _as(value, dtype):
    if isinstance(value, Tensor) and value.dtype is not dtype:
        return aten._to_copy.default(value, dtype=dtype)
    return value


@pointwise(binary.rsub)
def _rsub(self, other, *, alpha=1):
    return aten.sub.Tensor(other, self, alpha=alpha)


@pointwise(binary.floor_divide)
def _floor_divide(self, other):
    return aten.div.Tensor_mode(self, other, rounding_mode="floor")


def _fminmax(pick):
    def decomposition(self, other):
        both = pick(self, other)
        if not both.is_floating_point():
            return both
        # The NaN-ignoring form: where one side is NaN, the other side.
        both = aten.where.self(aten.isnan.default(other), self, both)
        return aten.where.self(aten.isnan.default(self), other, both)

    return decomposition


pointwise(binary.fmax)(_fminmax(aten.maximum.default))
pointwise(binary.fmin)(_fminmax(aten.minimum.default))


@pointwise(binary.hypot)
def _hypot(self, other):
    return aten.sqrt.default(self * self + other * other)


@pointwise(ternary.clamp_min)
def _clamp_min(self, min):
    return aten.clamp.default(self, min, None)


@pointwise(ternary.clamp_max)
def _clamp_max(self, max):
    return aten.clamp.default(self, None, max)


@pointwise(ternary.clamp_min_tensor)
def _clamp_min_tensor(self, min):
    return aten.clamp.Tensor(self, min, None)


@pointwise(ternary.clamp_max_tensor)
def _clamp_max_tensor(self, max):
    return aten.clamp.Tensor(self, None, max)


def _lerp(self, end, weight):
    # From whichever end is nearer to the weight, as the kernel does, so that weight 1 gives ``end``.
    difference = end - self
    low = self + weight * difference
    high = end - difference * (1 - weight)
    if isinstance(weight, int | float):
        return low if abs(weight) < 0.5 else high
    return aten.where.self(aten.abs.default(weight) < 0.5, low, high)


pointwise(ternary.lerp)(_lerp)
pointwise(ternary.lerp_tensor)(_lerp)


@pointwise(ternary.addcmul)
def _addcmul(self, tensor1, tensor2, *, value=1):
    return self + value * (tensor1 * tensor2) if value != 1 else self + tensor1 * tensor2


@pointwise(ternary.addcdiv)
def _addcdiv(self, tensor1, tensor2, *, value=1):
    return self + value * (tensor1 / tensor2) if value != 1 else self + tensor1 / tensor2


@pointwise(threshold_backward.threshold_backward)
def _threshold_backward(grad_output, self, threshold):
    zero = aten.full_like.default(grad_output, 0)
    return aten.where.self(self <= threshold, zero, grad_output)


@pointwise(unary.OPS["exp2"])
def _exp2(self):
    return aten.pow.Scalar(2, self)  # self is already in the compute dtype (integers become floats)


@pointwise(unary.OPS["frac"])
def _frac(self):
    return self - aten.trunc.default(self)


@pointwise(unary.OPS["round_decimals"])
def _round_decimals(self, *, decimals):
    scale = 10.0**decimals
    return aten.round.default(self * scale) / scale


@pointwise(unary.OPS["nan_to_num"])
def _nan_to_num(self, nan=None, posinf=None, neginf=None):
    if not self.is_floating_point():
        return aten.clone.default(self)
    big = finfo(self.dtype).max
    out = aten.where.self(aten.isnan.default(self), aten.full_like.default(self, 0.0 if nan is None else nan), self)
    out = aten.where.self(self == math.inf, aten.full_like.default(self, big if posinf is None else posinf), out)
    return aten.where.self(self == -math.inf, aten.full_like.default(self, -big if neginf is None else neginf), out)


@pointwise(unary.OPS["silu"])
def _silu(self):
    return self * aten.sigmoid.default(self)


@pointwise(unary.OPS["mish"])
def _mish(self):
    # softplus with PyTorch's threshold of 20, above which it is the identity.
    softplus = aten.where.self(self > 20, self, aten.log1p.default(aten.exp.default(self)))
    return self * aten.tanh.default(softplus)


@pointwise(unary.OPS["isfinite"])
def _isfinite(self):
    if not (self.is_floating_point() or self.is_complex()):
        return aten.full_like.default(self, True, dtype=D.bool_)
    return aten.logical_not.default(aten.logical_or.default(aten.isnan.default(self), aten.isinf.default(self)))


@lowered(aten.positive.default)
def _positive(self):
    if self.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return aten.alias.default(self)


@pointwise(gelu.gelu_backward)
def _gelu_backward(grad_output, self, *, approximate="none"):
    if approximate == "tanh":
        beta, kappa = math.sqrt(2.0 / math.pi), 0.044715
        inner = beta * (self + kappa * self * self * self)
        t = aten.tanh.default(inner)
        slope = 0.5 * (1 + t) + 0.5 * self * (1 - t * t) * (beta * (1 + 3 * kappa * self * self))
    else:
        cdf = 0.5 * (1 + aten.erf.default(self * math.sqrt(0.5)))
        pdf = aten.exp.default(-0.5 * self * self) * (1 / math.sqrt(2 * math.pi))
        slope = cdf + self * pdf
    return grad_output * slope


@pointwise(unary.OPS["angle"])
def _angle(self):
    if self.dtype.category == D.COMPLEX:
        # The real and imaginary parts, read through a real-dtype view of a contiguous copy.
        dense = aten.unsqueeze.default(aten.clone.default(self, memory_format="contiguous_format"), -1)
        parts = aten.view.dtype(dense, self.dtype.to_real())
        return aten.atan2.default(aten.select.int(parts, -1, 1), aten.select.int(parts, -1, 0))
    half_turns = aten.where.self(self < 0, aten.full_like.default(self, math.pi), aten.full_like.default(self, 0.0))
    return aten.where.self(aten.isnan.default(self), self, half_turns)


def _logaddexp_with(exp, log1p_scale: float):
    def decomposition(self, other):
        # The larger plus log(1 + exp(-|difference|)); equal infinities are their own answer.
        big = aten.maximum.default(self, other)
        diff = aten.abs.default(aten.sub.Tensor(self, other))
        tail = aten.mul.Tensor(aten.log1p.default(exp(aten.neg.default(diff))), log1p_scale)
        same_inf = aten.logical_and.default(aten.isinf.default(big), aten.eq.Tensor(self, other))
        return aten.where.self(same_inf, self, aten.add.Tensor(big, tail))

    return decomposition


pointwise(binary.logaddexp)(_logaddexp_with(aten.exp.default, 1.0))
pointwise(binary.logaddexp2)(_logaddexp_with(aten.exp2.default, 1.0 / math.log(2.0)))


@pointwise(binary.copysign)
def _copysign(self, other):
    magnitude = aten.abs.default(self)
    # other's sign bit: below zero, or a zero whose reciprocal is -inf (-0.0).
    negative = aten.logical_or.default(
        other < 0, aten.logical_and.default(other == 0, aten.reciprocal.default(other) < 0)
    )
    return aten.where.self(negative, aten.neg.default(magnitude), magnitude)


@pointwise(binary.heaviside)
def _heaviside(self, values):
    step = aten._to_copy.default(self > 0, dtype=self.dtype)
    return aten.where.self(self == 0, values, step)


@pointwise(unary.OPS["deg2rad"])
def _deg2rad(self):
    return aten.mul.Tensor(self, math.pi / 180)


@pointwise(unary.OPS["rad2deg"])
def _rad2deg(self):
    return aten.mul.Tensor(self, 180 / math.pi)


@pointwise(unary.OPS["signbit"])
def _signbit(self):
    if self.dtype.category != D.FLOATING:
        return self < 0
    # Below zero, or a zero whose reciprocal is -inf (-0.0). (A nan's sign bit is not seen here.)
    return aten.logical_or.default(self < 0, aten.logical_and.default(self == 0, aten.reciprocal.default(self) < 0))


@pointwise(unary.OPS["isposinf"])
def _isposinf(self):
    return self == math.inf


@pointwise(unary.OPS["isneginf"])
def _isneginf(self):
    return self == -math.inf
