from __future__ import annotations

from . import constraints
from ._ember import ember
from .exp_family import ExponentialFamily
from .gamma import _rsample_standard_gamma
from .utils import digamma, lgamma, xlogy

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex, with ``concentration`` of shape (..., K)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}  # noqa: RUF012 (read-only, as PyTorch declares it)
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",), {"concentration": 1})

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = _rsample_standard_gamma(self.concentration.expand(shape))
        out = gammas / gammas.sum(-1, True)
        finfo = ember.finfo(out.dtype)
        return out.clamp(min=finfo.tiny, max=1 - finfo.eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            xlogy(self.concentration - 1.0, value).sum(-1)
            + lgamma(self.concentration.sum(-1))
            - lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1)
        if bool(mask.any()):
            one_hot = ember.nn.functional.one_hot(self.concentration.argmax(-1), concentrationm1.shape[-1]).to(
                mode.dtype
            )
            mode = ember.where(mask.unsqueeze(-1), one_hot, mode)
        return mode

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            lgamma(self.concentration).sum(-1)
            - lgamma(a0)
            - (k - a0) * digamma(a0)
            - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1)
        )

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))
