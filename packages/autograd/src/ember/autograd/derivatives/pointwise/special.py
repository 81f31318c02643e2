"""Derivatives of the special functions (``ember.core.aten.pointwise.special``), PyTorch's formulas:
``lgamma' = digamma``, ``digamma' = polygamma(1, .) = zeta(2, .)``, ``i0' = i1``, the normal
distribution's through its density, ``zeta`` in its second argument, ``gammainc`` and ``gammaincc``
in their second. The Bessel functions of ``torch.special`` other than ``i0``/``i0e``/``i1``/``i1e``,
the polynomials and ``zeta``/``gammainc`` in their first argument have none in PyTorch: their backward
raises, as PyTorch's does.
"""

from __future__ import annotations

import math

from ember.autograd.derivatives.pointwise.pointwise_common import where
from ember.autograd.registry import derivative, nondifferentiable
from ember.core.dispatch import ops

aten = ops.aten

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2PI = math.sqrt(2.0 * math.pi)


def not_implemented(name: str):
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")


@derivative(aten.lgamma.default, save=("self",), jvp="elementwise")
def _lgamma(grad, self, **_):
    return grad * aten.digamma.default(self)


@derivative(aten.digamma.default, save=("self",), jvp="elementwise")
def _digamma(grad, self, **_):
    return grad * aten.special_zeta.default(self.new_full((), 2.0), self)


@derivative(aten.erfc.default, save=("self",), jvp="elementwise")
def _erfc(grad, self, **_):
    return -TWO_OVER_SQRT_PI * (-self * self).exp() * grad


@derivative(aten.i0.default, save=("self",), jvp="elementwise")
def _i0(grad, self, **_):
    return grad * aten.special_i1.default(self)


@derivative(aten.special_i0e.default, save=("self", "result"), jvp="elementwise")
def _i0e(grad, self, result, **_):
    return grad * (aten.special_i1e.default(self) - self.sign() * result)


@derivative(aten.special_i1.default, save=("self", "result"), jvp="elementwise")
def _i1(grad, self, result, **_):
    zero = self == 0
    safe = where(zero, 1.0, self)
    return grad * where(zero, 0.5, aten.i0.default(self) - result / safe)


@derivative(aten.special_i1e.default, save=("self", "result"), jvp="elementwise")
def _i1e(grad, self, result, **_):
    zero = self == 0
    safe = where(zero, 1.0, self)
    return grad * where(zero, 0.5, aten.special_i0e.default(self) - result * (self.sign() + 1 / safe))


@derivative(aten.sinc.default, save=("self",), jvp="elementwise")
def _sinc(grad, self, **_):
    scaled = math.pi * self
    zero = self == 0
    safe = where(zero, 1.0, self)
    slope = (scaled * scaled.cos() - scaled.sin()) / (math.pi * safe * safe)
    return grad * where(zero, 0.0, slope)


@derivative(aten.logit.default, save=("self",), jvp="elementwise")
def _logit(grad, self, eps=None, **_):
    slope = grad / (self * (1 - self))
    if eps is None:
        return slope
    return where((self < eps) | (self > 1 - eps), 0.0, slope)


@derivative(aten.special_erfcx.default, save=("self", "result"), jvp="elementwise")
def _erfcx(grad, self, result, **_):
    return grad * (2 * self * result - TWO_OVER_SQRT_PI)


@derivative(aten.special_ndtr.default, save=("self",), jvp="elementwise")
def _ndtr(grad, self, **_):
    return grad * (-0.5 * self * self).exp() * INV_SQRT_2PI


@derivative(aten.special_ndtri.default, save=("result",), jvp="elementwise")
def _ndtri(grad, self, result, **_):
    return grad * SQRT_2PI * (0.5 * result * result).exp()


@derivative(aten.special_log_ndtr.default, save=("self", "result"), jvp="elementwise")
def _log_ndtr(grad, self, result, **_):
    return grad * (-0.5 * self * self - result).exp() * INV_SQRT_2PI


@derivative(aten.special_entr.default, save=("self",), jvp="elementwise")
def _entr(grad, self, **_):
    return grad * -(1 + self.log())


@derivative(aten.xlogy.Tensor, save=("self", "other"))
def _xlogy(grad, self, other, needs, **_):
    g_self = grad * other.log() if needs[0] else None
    g_other = grad * self / other if needs[1] else None
    return g_self, g_other


@derivative(aten.special_xlog1py.default, save=("self", "other"))
def _xlog1py(grad, self, other, needs, **_):
    g_self = grad * other.log1p() if needs[0] else None
    g_other = grad * self / (other + 1) if needs[1] else None
    return g_self, g_other


@derivative(aten.special_zeta.default, save=("self", "other"))
def _zeta(grad, self, other, needs, **_):
    if needs[0]:
        not_implemented("zeta")
    return None, grad * -self * aten.special_zeta.default(self + 1, other)


def _incomplete_gamma_slope(a, x):
    return ((a - 1) * x.log() - x - aten.lgamma.default(a)).exp()


@derivative(aten.special_gammainc.default, save=("self", "other"))
def _gammainc(grad, self, other, needs, **_):
    if needs[0]:
        not_implemented("igamma: input")
    return None, grad * _incomplete_gamma_slope(self, other)


@derivative(aten.special_gammaincc.default, save=("self", "other"))
def _gammaincc(grad, self, other, needs, **_):
    if needs[0]:
        not_implemented("igammac: input")
    return None, -grad * _incomplete_gamma_slope(self, other)


# Outputs that carry no gradient in PyTorch (its Bessel functions past i0/i1 and its polynomials).
nondifferentiable(
    *(
        getattr(aten, f"special_{name}").default
        for name in (
            "bessel_j0",
            "bessel_j1",
            "bessel_y0",
            "bessel_y1",
            "modified_bessel_i0",
            "modified_bessel_i1",
            "modified_bessel_k0",
            "modified_bessel_k1",
            "scaled_modified_bessel_k0",
            "scaled_modified_bessel_k1",
            "spherical_bessel_j0",
            "chebyshev_polynomial_t",
            "chebyshev_polynomial_u",
            "chebyshev_polynomial_v",
            "chebyshev_polynomial_w",
            "shifted_chebyshev_polynomial_t",
            "shifted_chebyshev_polynomial_u",
            "shifted_chebyshev_polynomial_v",
            "shifted_chebyshev_polynomial_w",
            "hermite_polynomial_h",
            "hermite_polynomial_he",
            "laguerre_polynomial_l",
            "legendre_polynomial_p",
        )
    )
)
