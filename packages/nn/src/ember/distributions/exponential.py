from __future__ import annotations

from numbers import Number

from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Exponential distribution with ``rate``."""

    arg_constraints = {"rate": constraints.positive}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return ember.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        # -log(1 - u) is Exponential(1); 1 - u is in (0, 1] so the log is finite
        return -ember.log1p(-u) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ember.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -ember.log(-x)
