from __future__ import annotations

import math
from numbers import Number, Real

from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


def _near_zero(x):
    # PyTorch's isclose(x, 0) with its default tolerances
    return x.abs() <= 1e-8


class GeneralizedPareto(Distribution):
    """Generalized Pareto with ``loc``, ``scale`` and shape ``concentration`` (xi)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}  # noqa: RUF012 (read-only, as PyTorch declares it)
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if isinstance(loc, Number) and isinstance(scale, Number) and isinstance(concentration, Number):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _safe_concentration(self):
        zero = _near_zero(self.concentration)
        return zero, ember.where(zero, ember.ones_like(self.concentration), self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, xi = self._safe_concentration()
        y = 1 / xi + ember.ones_like(z)
        nonzero = ember.where(y == 0, y, y * ember.log1p(xi * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - ember.where(zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, xi = self._safe_concentration()
        return ember.where(zero, -z, -ember.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return ember.log1p(-ember.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return ember.exp(self.log_cdf(value))

    def icdf(self, value):
        zero, xi = self._safe_concentration()
        logu = ember.log1p(-value)
        nonzero = self.loc + self.scale / xi * ember.expm1(-xi * logu)
        return ember.where(zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        xi = ember.where(valid, self.concentration, ember.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - xi)
        return ember.where(valid, result, ember.full_like(result, math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        xi = ember.where(valid, self.concentration, ember.full_like(self.concentration, 0.25))
        result = self.scale**2 / ((1 - xi) ** 2 * (1 - 2 * xi))
        return ember.where(valid, result, ember.full_like(result, math.nan))

    def entropy(self):
        return (ember.log(self.scale) + self.concentration + 1).expand(self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = ember.where(
            self.concentration < 0, lower - self.scale / self.concentration, ember.full_like(lower, math.inf)
        )
        return constraints.interval(lower, upper)
