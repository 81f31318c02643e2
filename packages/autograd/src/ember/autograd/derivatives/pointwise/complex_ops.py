"""Derivatives of the ops that make and conjugate complex tensors (``ember.core.aten.pointwise.complex_ops``).

PyTorch's convention: the gradient of a complex input is the conjugate Wirtinger derivative of a
real loss times two, so a linear map's gradient is its adjoint applied to the incoming gradient.
``conj`` is its own adjoint; ``complex(re, im)`` sends ``g`` back as ``(Re g, Im g)``. ``polar``
follows PyTorch's formula: with ``r = polar(abs, angle)``, ``abs`` gets ``Re(conj(g) * sgn(r))``
and ``angle`` gets ``Re(conj(g) * 1j * r)``.
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import conj, where
from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.conj_physical.default, jvp="linear")
def _conj_physical(grad, self, **_):
    return conj(grad)


@derivative(aten.complex.default, jvp="linear")
def _complex(grad, real, imag, needs, **_):
    return (grad.real if needs[0] else None), (grad.imag if needs[1] else None)


def _sgn(z):
    magnitude = z.abs()
    return where(magnitude == 0, 0, z / magnitude)


@derivative(aten.polar.default, save=("result",))
def _polar(grad, abs, angle, result, needs, **_):
    g = conj(grad)
    g_abs = (g * _sgn(result)).real if needs[0] else None
    g_angle = (g * (result * 1j)).real if needs[1] else None
    return g_abs, g_angle
