"""Derivatives of the complex views (``ember.core.aten.shape.complex_views``).

Both views are the identity on the underlying reals, so each one's gradient is the other view of
the incoming gradient: ``view_as_real``'s gradient ``[gx, gy]`` stands for ``gx + 1j * gy``.
The gradient may be laid out in any way, so it is made contiguous first (the views need a
contiguous last dimension).
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.view_as_real.default, jvp="linear")
def _view_as_real(grad, self, **_):
    return aten.view_as_complex.default(grad.contiguous())


@derivative(aten.view_as_complex.default, jvp="linear")
def _view_as_complex(grad, self, **_):
    return aten.view_as_real.default(grad.contiguous())
