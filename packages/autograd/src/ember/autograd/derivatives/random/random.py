"""Derivatives of the random ops (``ember.core.aten.random_*``), by PyTorch's rules.

A draw does not move with its parameters here: the sampling ops whose outputs PyTorch lets require
grad (``bernoulli``, ``normal`` with tensor parameters, the in-place fills) give their tensor inputs
a gradient of zeros, which reaches ``.grad`` as zeros, not as nothing. ``bernoulli.p`` has no
derivative in PyTorch and raises at backward here too. The ``*_like`` factories and
``multinomial`` are not differentiable (``nondifferentiable.py``).
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.aten.factories.factories import zeros_function
from ember.core.dispatch import ops

aten = ops.aten


def _zeros(meta, grad):
    return zeros_function(tuple(meta.shape), dtype=grad.dtype, device=grad.device)


@derivative(
    aten.bernoulli.default,
    aten.uniform_.default,
    aten.normal_.default,
    aten.exponential_.default,
    aten.random_.default,
    aten.random_.to,
    getattr(aten.random_, "from"),  # a Python keyword
    aten.bernoulli_.float,
    aten.uniform.default,
    aten.normal_functional.default,
    aten.exponential.default,
    aten.random.default,
    aten.random.to,
    getattr(aten.random, "from"),
)
def _fill(grad, self, **_):
    return _zeros(self, grad)


@derivative(aten.bernoulli_.Tensor, aten.bernoulli.Tensor)
def _bernoulli_tensor(grad, self, p, **_):
    return _zeros(self, grad), _zeros(p, grad)


@derivative(aten.bernoulli.p)
def _bernoulli_p(grad, **_):
    raise RuntimeError("derivative for aten::bernoulli is not implemented")


@derivative(aten.normal.Tensor_float)
def _normal_mean(grad, mean, **_):
    return _zeros(mean, grad)


@derivative(aten.normal.float_Tensor)
def _normal_std(grad, std, **_):
    return _zeros(std, grad)


@derivative(aten.normal.Tensor_Tensor)
def _normal_both(grad, mean, std, **_):
    return _zeros(mean, grad), _zeros(std, grad)
