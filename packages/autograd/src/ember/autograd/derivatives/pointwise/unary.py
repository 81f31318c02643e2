"""Derivatives of the unary pointwise ops (``ember.core.aten.pointwise.unary``).

Each formula is PyTorch's, written in the same order of operations so that special points agree:
``abs'(0) = 0`` (through ``sgn``), ``relu'(0) = 0``, ``sqrt'(0) = inf``, and the rounding ops and
``sign`` pass a zero gradient (a tensor of zeros, as PyTorch gives, not none). Formulas that read
the output (exp, tanh, sigmoid...) save ``result`` instead of recomputing it. Where PyTorch's
gradient is one kernel (tanh, sigmoid, gelu, silu, mish), float16 and bfloat16 compute in float32
and round once, as that kernel does. Predicates and bitwise ops are not differentiable.
"""

from __future__ import annotations

import math

from ember.autograd.derivatives.pointwise.pointwise_common import conj, where, zeros
from ember.autograd.registry import derivative, nondifferentiable
from ember.core import dtypes as D
from ember.core.dispatch import ops

aten = ops.aten

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
SQRT_PI_OVER_TWO = 0.5 * math.sqrt(math.pi)
SQRT1_2 = math.sqrt(0.5)

_REDUCED = (D.float16, D.bfloat16)


def _opmath(grad, x, reduced=_REDUCED):
    """Where PyTorch's gradient is one kernel (tanh, sigmoid, the activations), float16 and bfloat16
    compute in float32 and round once; so do these formulas."""
    if x.dtype in reduced:
        return grad.to(D.float32), x.to(D.float32)
    return grad, x


def sgn(x):
    """``x / |x|`` (0 at 0); for real tensors ``sign``, whose value at nan is 0 as in PyTorch."""
    if x.dtype.category != D.COMPLEX:
        return x.sign()
    magnitude = x.abs()
    return where(magnitude == 0, 0, x / magnitude)


@derivative(aten.neg.default, jvp="linear")
def _neg(grad, self, **_):
    return -grad


@derivative(aten.positive.default, jvp="linear")
def _positive(grad, self, **_):
    return grad  # positive returns its input itself, so this runs only if a kernel ever copies


@derivative(aten.abs.default, save=("self",), jvp="elementwise")
def _abs(grad, self, **_):
    return grad * sgn(self)


@derivative(aten.exp.default, save=("result",), jvp="elementwise")
def _exp(grad, self, result, **_):
    return grad * conj(result)


@derivative(aten.exp2.default, save=("result",), jvp="elementwise")
def _exp2(grad, self, result, **_):
    return grad * conj(result) * LN2


@derivative(aten.expm1.default, save=("result",), jvp="elementwise")
def _expm1(grad, self, result, **_):
    return grad * (conj(result) + 1)


@derivative(aten.log.default, save=("self",), jvp="elementwise")
def _log(grad, self, **_):
    return grad / conj(self)


@derivative(aten.log2.default, save=("self",), jvp="elementwise")
def _log2(grad, self, **_):
    return grad / (conj(self) * LN2)


@derivative(aten.log10.default, save=("self",), jvp="elementwise")
def _log10(grad, self, **_):
    return grad / (conj(self) * LN10)


@derivative(aten.log1p.default, save=("self",), jvp="elementwise")
def _log1p(grad, self, **_):
    return grad / conj(self + 1)


@derivative(aten.sqrt.default, save=("result",), jvp="elementwise")
def _sqrt(grad, self, result, **_):
    return grad / (2 * conj(result))


@derivative(aten.rsqrt.default, save=("result",), jvp="elementwise")
def _rsqrt(grad, self, result, **_):
    return -0.5 * grad * conj(result.pow(3))


@derivative(aten.sin.default, save=("self",), jvp="elementwise")
def _sin(grad, self, **_):
    return grad * conj(self.cos())


@derivative(aten.cos.default, save=("self",), jvp="elementwise")
def _cos(grad, self, **_):
    return grad * -conj(self.sin())


@derivative(aten.tan.default, save=("result",), jvp="elementwise")
def _tan(grad, self, result, **_):
    return grad * conj(1 + result.pow(2))


@derivative(aten.asin.default, save=("self",), jvp="elementwise")
def _asin(grad, self, **_):
    return grad * conj((-self * self + 1).rsqrt())


@derivative(aten.acos.default, save=("self",), jvp="elementwise")
def _acos(grad, self, **_):
    return grad * conj(-(-self * self + 1).rsqrt())


@derivative(aten.atan.default, save=("self",), jvp="elementwise")
def _atan(grad, self, **_):
    return grad / conj(self * self + 1)


@derivative(aten.sinh.default, save=("self",), jvp="elementwise")
def _sinh(grad, self, **_):
    return grad * conj(self.cosh())


@derivative(aten.cosh.default, save=("self",), jvp="elementwise")
def _cosh(grad, self, **_):
    return grad * conj(self.sinh())


@derivative(aten.tanh.default, save=("result",), jvp="elementwise")
def _tanh(grad, self, result, **_):
    grad, y = _opmath(grad, result)
    return grad * conj(1 - y * y)


@derivative(aten.asinh.default, save=("self",), jvp="elementwise")
def _asinh(grad, self, **_):
    return grad * conj((self.pow(2) + 1).rsqrt())


@derivative(aten.acosh.default, save=("self",), jvp="elementwise")
def _acosh(grad, self, **_):
    if self.dtype.category == D.COMPLEX:
        # Two square roots, not one of z^2 - 1: the branch cut of acosh's, as PyTorch takes it.
        return grad * conj((self + 1).rsqrt() * (self - 1).rsqrt())
    return grad * conj((self.pow(2) - 1).rsqrt())


@derivative(aten.atanh.default, save=("self",), jvp="elementwise")
def _atanh(grad, self, **_):
    return grad * (1 / conj(1 - self.pow(2)))


@derivative(aten.deg2rad.default, jvp="linear")
def _deg2rad(grad, self, **_):
    return grad * (math.pi / 180)


@derivative(aten.rad2deg.default, jvp="linear")
def _rad2deg(grad, self, **_):
    return grad * (180 / math.pi)


@derivative(aten.angle.default, save=("self",), jvp="elementwise")
def _angle(grad, self, **_):
    # The angle of a real number is piecewise constant; of a complex one, d(angle) = Im(dz / z).
    if self.dtype.category != D.COMPLEX:
        return zeros(grad)
    return where(self == 0, zeros(self), grad * self / self.abs().pow(2) * 1j)


@derivative(aten.sigmoid.default, save=("result",), jvp="elementwise")
def _sigmoid(grad, self, result, **_):
    grad, y = _opmath(grad, result, (D.bfloat16,))  # PyTorch's float16 kernel computes in float16
    if y.dtype.category == D.COMPLEX:
        return grad * conj((1 - y) * y)
    return grad * (1 - y) * y


@derivative(aten.reciprocal.default, save=("result",), jvp="elementwise")
def _reciprocal(grad, self, result, **_):
    return -grad * conj(result * result)


@derivative(aten.erf.default, save=("self",), jvp="elementwise")
def _erf(grad, self, **_):
    return TWO_OVER_SQRT_PI * (-self.pow(2)).exp() * grad


@derivative(aten.erfinv.default, save=("result",), jvp="elementwise")
def _erfinv(grad, self, result, **_):
    return SQRT_PI_OVER_TWO * result.pow(2).exp() * grad


@derivative(
    aten.floor.default,
    aten.ceil.default,
    aten.trunc.default,
    aten.round.default,
    aten.round.decimals,
    aten.sign.default,
    jvp="elementwise",
)
def _step(grad, self, **_):
    return zeros(grad)


@derivative(aten.frac.default, jvp="elementwise")
def _frac(grad, self, **_):
    return grad


@derivative(aten.relu.default, save=("result",), jvp="elementwise")
def _relu(grad, self, result, **_):
    return aten.threshold_backward.default(grad, result, 0)


@derivative(aten.threshold_backward.default, save=("self",))
def _threshold_backward(grad, grad_output, self, threshold, **_):
    return aten.threshold_backward.default(grad, self, threshold), zeros(grad)


@derivative(aten.nan_to_num.default, save=("self",), jvp="elementwise")
def _nan_to_num(grad, self, **_):
    return grad * self.isfinite()


# -- activations: the expressions of PyTorch's backward kernels ------------------------------------


@derivative(aten.gelu.default, save=("self",), jvp="elementwise")
def _gelu(grad, self, approximate, **_):
    if approximate == "none":
        return aten.gelu_backward(grad, self)  # positional: the kernel's shortcut for plain calls
    return aten.gelu_backward(grad, self, approximate=approximate)


def _gelu_curvature(x, approximate):
    """The second derivative of GELU at ``x``, for the derivative of ``gelu_backward``."""
    if approximate == "tanh":
        beta = math.sqrt(2.0) * TWO_OVER_SQRT_PI * 0.5
        kappa = 0.044715
        x_sq = x * x
        tanh_inner = (beta * (x + kappa * (x_sq * x))).tanh()
        inner_slope = beta * (1 + 3 * kappa * x_sq)
        inner_curvature = (6 * beta * kappa) * x
        return (1 - tanh_inner * tanh_inner) * (
            inner_slope + 0.5 * x * (inner_curvature - 2 * tanh_inner * inner_slope * inner_slope)
        )
    pdf = (TWO_OVER_SQRT_PI * SQRT1_2 * 0.5) * (x * x * -0.5).exp()
    return pdf * (2 - x * x)


def _gelu_backward_jvp(tangents, grad_output, self, approximate, **_):
    t_grad, t_self = tangents
    out = None
    if t_grad is not None:
        out = aten.gelu_backward(t_grad, self, approximate=approximate)
    if t_self is not None:
        term = t_self * grad_output * _gelu_curvature(self, approximate)
        out = term if out is None else out + term
    return out


@derivative(aten.gelu_backward.default, save=("grad_output", "self"), jvp=_gelu_backward_jvp)
def _gelu_backward(grad, grad_output, self, approximate, needs, **_):
    g_grad = aten.gelu_backward(grad, self, approximate=approximate) if needs[0] else None
    g_self = grad * grad_output * _gelu_curvature(self, approximate) if needs[1] else None
    return g_grad, g_self


@derivative(aten.silu.default, save=("self",), jvp="elementwise")
def _silu(grad, self, **_):
    grad, x = _opmath(grad, self)
    sigmoid = 1 / (1 + (-x).exp())
    return grad * sigmoid * (1 + x * (1 - sigmoid))


@derivative(aten.mish.default, save=("self",), jvp="elementwise")
def _mish(grad, self, **_):
    grad, x = _opmath(grad, self)
    sigmoid = 1 / (1 + (-x).exp())
    tanh_softplus = x.exp().log1p().tanh()
    return grad * (tanh_softplus + x * sigmoid * (1 - tanh_softplus * tanh_softplus))


nondifferentiable(
    aten.isnan.default,
    aten.isinf.default,
    aten.isfinite.default,
    aten.signbit.default,
    aten.isposinf.default,
    aten.isneginf.default,
    aten.logical_not.default,
    aten.bitwise_not.default,
)
