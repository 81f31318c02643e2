from __future__ import annotations

from numbers import Number

from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from .exp_family import ExponentialFamily
from .utils import broadcast_all, lgamma, xlogy

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson distribution with ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return _poisson(self.rate.expand(shape).detach())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self):
        return (ember.log(self.rate),)

    def _log_normalizer(self, x):
        return ember.exp(x)


def _poisson(rate):
    """Poisson draws: the multiplication method below rate 10, Hormann's transformed rejection (PTRS) above."""
    small = rate < 10
    out = ember.zeros_like(rate)
    # multiplication method: count uniforms multiplied in until the product falls below exp(-rate)
    limit = ember.exp(-ember.where(small, rate, ember.zeros_like(rate)))
    prod = ember.rand(rate.shape, dtype=rate.dtype, device=rate.device)
    active = small & (prod > limit)
    while bool(active.any()):
        out = out + active.to(rate.dtype)
        prod = ember.where(active, prod * ember.rand(rate.shape, dtype=rate.dtype, device=rate.device), prod)
        active = active & (prod > limit)
    if not bool((~small).any()):
        return out
    lam = ember.where(small, ember.full_like(rate, 10.0), rate)
    slam, loglam = lam.sqrt(), lam.log()
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    done = small.clone()
    while not bool(done.all()):
        u = ember.rand(rate.shape, dtype=rate.dtype, device=rate.device) - 0.5
        v = ember.rand(rate.shape, dtype=rate.dtype, device=rate.device)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + lam + 0.43).floor()
        quick = (us >= 0.07) & (v <= vr)
        bad = (k < 0) | ((us < 0.013) & (v > us))
        kk = k.clamp(min=0)
        slow = (v.log() + invalpha.log() - (a / (us * us) + b).log()) <= (-lam + kk * loglam - lgamma(kk + 1))
        accept = ~done & (quick | (~bad & slow))
        out = ember.where(accept, k, out)
        done = done | accept
    return out
