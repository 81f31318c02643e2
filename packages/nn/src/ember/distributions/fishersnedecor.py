from __future__ import annotations

import math
from numbers import Number

from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, lgamma

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """Fisher-Snedecor F with ``df1`` and ``df2`` degrees of freedom: (X1 / df1) / (X2 / df2), Xi ~ Chi2(dfi)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = Size() if isinstance(df1, Number) and isinstance(df2, Number) else self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = ember.where(self.df2 <= 2, ember.full_like(self.df2, math.nan), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return ember.where(self.df1 <= 2, ember.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        df2 = ember.where(self.df2 <= 4, ember.full_like(self.df2, math.nan), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = ember.finfo(x2.dtype).tiny
        x2 = x2.clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * ember.log(value)
        t3 = (ct1 + ct2) * ember.log1p(ct3 * value)
        return t1 + t2 - t3
