from __future__ import annotations

import math

from . import constraints
from ._ember import ember
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, digamma, euler_constant, lgamma

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X ** n] for X ~ Kumaraswamy(a, b): b * B(1 + n / a, b)."""
    arg1 = 1 + n / a
    log_value = lgamma(arg1) + lgamma(b) - lgamma(arg1 + b)
    return b * ember.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy on (0, 1): (1 - U ** (1 / concentration0)) ** (1 / concentration1), U uniform."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(
            ember.full_like(self.concentration0, 0),
            ember.full_like(self.concentration0, 1),
            validate_args=validate_args,
        )
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # as PyTorch computes it (in log space), NaN where a concentration is below 1
        log_mode = (
            self.concentration0.reciprocal() * (-self.concentration0).log1p()
            - (-self.concentration0 * self.concentration1).log1p()
        )
        bad = (self.concentration0 < 1) | (self.concentration1 < 1)
        return ember.where(bad, ember.full_like(log_mode, math.nan), log_mode).exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - ember.pow(self.mean, 2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - ember.log(self.concentration1) - ember.log(self.concentration0)
