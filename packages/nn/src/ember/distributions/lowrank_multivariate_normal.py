"""Multivariate normal with covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``. Densities go through
the Cholesky factor of the full covariance (event sizes here are small); samples use the low-rank form."""

from __future__ import annotations

from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from ._linalg import cholesky, diag_embed
from .multivariate_normal import MultivariateNormal, _batch_mv
from .utils import _standard_normal

__all__ = ["LowRankMultivariateNormal"]


class LowRankMultivariateNormal(MultivariateNormal):
    arg_constraints = {  # noqa: RUF012 (read-only, as PyTorch declares it)
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {tuple(event_shape)}")
        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        batch_shape = ember.broadcast_shapes(loc_.shape[:-2], cov_factor.shape[:-2], cov_diag_.shape[:-2])
        self.loc = loc.expand(batch_shape + event_shape)
        self.cov_factor = cov_factor.expand(batch_shape + tuple(cov_factor.shape[-2:]))
        self.cov_diag = cov_diag.expand(batch_shape + event_shape)
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        covariance = cov_factor @ cov_factor.mT + diag_embed(cov_diag)
        self._unbroadcasted_scale_tril = cholesky(covariance)
        super(MultivariateNormal, self).__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            self._batch_shape + self._event_shape
        )

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_w = _standard_normal(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w) + self._unbroadcasted_cov_diag.sqrt() * eps_d
