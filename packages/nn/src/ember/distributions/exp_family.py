"""``ExponentialFamily``: distributions p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)); the entropy and the KL
divergence between two members follow from the log-normalizer F by autograd (Bregman divergence)."""

from __future__ import annotations

from ember.core.tensor import Tensor

from ._ember import ember
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float | Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """Entropy from the Bregman divergence of the log-normalizer."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients, strict=False):
            result = result - (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
