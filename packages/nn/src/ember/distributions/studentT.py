from __future__ import annotations

import math

from . import constraints
from ._ember import ember
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all, digamma, lgamma

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, ``loc`` and ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        m = self.loc.clone()
        m[self.df <= 1] = math.nan
        return m

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        m = self.df.clone()
        m[self.df > 2] = self.scale[self.df > 2].pow(2) * self.df[self.df > 2] / (self.df[self.df > 2] - 2)
        m[(self.df <= 2) & (self.df > 1)] = math.inf
        m[self.df <= 1] = math.nan
        return m

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * ember.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + lgamma(0.5 * self.df)
            - lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * ember.log1p(y**2.0 / self.df) - Z

    def entropy(self):
        lbeta = lgamma(0.5 * self.df) + math.lgamma(0.5) - lgamma(0.5 * (self.df + 1))
        return (
            self.scale.log()
            + 0.5 * (self.df + 1) * (digamma(0.5 * (self.df + 1)) - digamma(0.5 * self.df))
            + 0.5 * self.df.log()
            + lbeta
        )
