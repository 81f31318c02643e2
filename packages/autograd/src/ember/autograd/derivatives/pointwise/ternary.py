"""Derivatives of the ternary pointwise ops (``ember.core.aten.pointwise.ternary``): where, clamp and its
one-sided forms, lerp, addcmul, addcdiv.

clamp follows PyTorch at the bounds: the input's gradient passes where ``min <= x <= max`` (the
bounds included; a nan input or bound passes nothing). With tensor bounds, a bound gets the gradient
where it is the value returned: ``min`` where ``x < min`` and ``min < max``, ``max`` where
``x > max`` or ``max < min`` (max wins when the bounds cross, as in the forward).
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import conj, where
from ember.autograd.registry import derivative
from ember.core.aten.factories.factories import full_like
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.where.self, save=("condition",))
def _where(grad, condition, self, other, needs, **_):
    g_self = where(condition, grad, 0.0) if needs[1] else None
    g_other = where(condition, 0.0, grad) if needs[2] else None
    return None, g_self, g_other


# -- clamp ----------------------------------------------------------------------------------------


def _passes(self, min, max):
    """Where the input itself is returned: ``min <= self <= max`` for the bounds given."""
    if min is not None and max is not None:
        return (self >= min).logical_and(self <= max)
    if min is not None:
        return self >= min
    return self <= max


@derivative(aten.clamp.default, save=("self",), jvp="elementwise")
def _clamp(grad, self, min, max, **_):
    if min is None and max is None:
        return grad
    return where(_passes(self, min, max), grad, 0.0)


@derivative(aten.clamp.Tensor, save=("self", "min", "max"))
def _clamp_tensor(grad, self, min, max, needs, **_):
    g_self = g_min = g_max = None
    if min is None and max is None:
        return grad, None, None
    if needs[0]:
        g_self = where(_passes(self, min, max), grad, 0.0)
    if needs[1]:
        below = self < min
        if max is not None:
            below = below.logical_and(min < max)
        g_min = where(below, grad, 0.0)
    if needs[2]:
        above = self > max
        if min is not None:
            above = above.logical_or(max < min)
        g_max = where(above, grad, 0.0)
    return g_self, g_min, g_max


@derivative(aten.clamp_min.default, save=("self",), jvp="elementwise")
def _clamp_min(grad, self, min, **_):
    return where(self >= min, grad, 0.0)


@derivative(aten.clamp_min.Tensor, save=("self", "min"))
def _clamp_min_tensor(grad, self, min, needs, **_):
    return (where(self >= min, grad, 0.0) if needs[0] else None), (where(self < min, grad, 0.0) if needs[1] else None)


@derivative(aten.clamp_max.default, save=("self",), jvp="elementwise")
def _clamp_max(grad, self, max, **_):
    return where(self <= max, grad, 0.0)


@derivative(aten.clamp_max.Tensor, save=("self", "max"))
def _clamp_max_tensor(grad, self, max, needs, **_):
    return (where(self <= max, grad, 0.0) if needs[0] else None), (where(self > max, grad, 0.0) if needs[1] else None)


# -- lerp -----------------------------------------------------------------------------------------


@derivative(aten.lerp.Scalar)
def _lerp(grad, self, end, weight, needs, **_):
    w = complex(weight) if isinstance(weight, complex) else float(weight)
    return (grad * conj(1 - w) if needs[0] else None), (grad * conj(w) if needs[1] else None)


@derivative(aten.lerp.Tensor, save=("self", "end", "weight"))
def _lerp_tensor(grad, self, end, weight, needs, **_):
    g_self = grad * conj(1 - weight) if needs[0] else None
    g_end = grad * conj(weight) if needs[1] else None
    g_weight = grad * conj(end - self) if needs[2] else None
    return g_self, g_end, g_weight


# -- addcmul and addcdiv -------------------------------------------------------------------------


@derivative(aten.addcmul.default, save=("tensor1", "tensor2"))
def _addcmul(grad, self, tensor1, tensor2, value, needs, **_):
    g_t1 = grad * conj(tensor2 * value) if needs[1] else None
    g_t2 = grad * conj(tensor1 * value) if needs[2] else None
    return (grad if needs[0] else None), g_t1, g_t2


@derivative(aten.addcdiv.default, save=("tensor1", "tensor2"))
def _addcdiv(grad, self, tensor1, tensor2, value, needs, **_):
    # value / tensor2 as PyTorch's C++ operator computes it: value filled in tensor2's dtype, then divided.
    g_t1 = grad * conj(full_like(tensor2, value).div_(tensor2)) if needs[1] else None
    g_t2 = -grad * conj(value * tensor1 / (tensor2 * tensor2)) if needs[2] else None
    return (grad if needs[0] else None), g_t1, g_t2
