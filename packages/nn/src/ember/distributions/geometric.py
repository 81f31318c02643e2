from __future__ import annotations

from numbers import Number

import ember.nn.functional as F
from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Number of failures before the first success in Bernoulli(probs) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        probs_or_logits = probs if probs is not None else logits
        batch_shape = Size() if isinstance(probs_or_logits, Number) else probs_or_logits.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                invalid_value = value.data[~valid]
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{invalid_value}"
                )

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone()
        probs[(probs == 1) & (value == 0)] = 0
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
