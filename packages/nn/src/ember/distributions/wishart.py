"""Wishart distribution over positive-definite matrices, sampled by the Bartlett decomposition
(L A)(L A)^T with A lower triangular: chi-distributed diagonal, standard normal below it."""

from __future__ import annotations

import math
import warnings
from numbers import Number

from ember.core.tensor import Size

from . import constraints
from ._ember import ember
from ._linalg import cholesky, cholesky_inverse, diag_embed, solve_triangular_lower, solve_triangular_upper
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .utils import digamma, lazy_property, mvlgamma

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    return sum(digamma(x - i / 2) for i in range(p))


def _logdet_pd(m):
    return 2 * cholesky(m).diagonal(dim1=-2, dim2=-1).log().sum(-1)


class Wishart(ExponentialFamily):
    """Wishart with ``df`` degrees of freedom and one of ``covariance_matrix``, ``precision_matrix``, ``scale_tril``."""

    arg_constraints = {  # noqa: RUF012 (read-only, as PyTorch declares it)
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
        "df": constraints.greater_than(0),
    }
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = ember.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = cholesky(cholesky_inverse(cholesky(precision_matrix)))
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        p = self._event_shape[-1]
        arange = ember.arange(
            p, dtype=self._unbroadcasted_scale_tril.dtype, device=self._unbroadcasted_scale_tril.device
        )
        return Chi2(df=self.df.unsqueeze(-1) - arange.expand(batch_shape + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._batch_shape + self._event_shape)

    @property
    def mean(self):
        return self.df.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor <= 0, ember.full_like(factor, math.nan), factor)
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.reshape(self._batch_shape + (1, 1)) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        p = self._event_shape[-1]
        eps = ember.finfo(self._unbroadcasted_scale_tril.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = ember.randn(Size(sample_shape) + self._batch_shape + (p, p), dtype=diag.dtype, device=diag.device).tril(
            -1
        )
        chol = self._unbroadcasted_scale_tril @ (below + diag_embed(diag))
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett samples; a sample that is numerically singular is redrawn up to ``max_try_correction`` times."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        for _ in range(max_try_correction):
            singular = ~self.support.check(sample.detach())
            if not bool(singular.any()):
                break
            warnings.warn("Singular sample detected.", stacklevel=2)
            sample = ember.where(
                singular.reshape(singular.shape + (1, 1)), self._bartlett_sampling(sample_shape), sample
            )
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        batch = ember.broadcast_shapes(L.shape[:-2], value.shape[:-2])
        L_b = L.expand(batch + (p, p))
        solved = solve_triangular_upper(L_b.mT, solve_triangular_lower(L_b, value.expand(batch + (p, p))))
        trace = solved.diagonal(dim1=-2, dim2=-1).sum(-1)
        return (
            -nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            - mvlgamma(nu / 2, p)
            + (nu - p - 1) / 2 * _logdet_pd(value)
            - trace / 2
        )

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return (
            (p + 1) * (p * _LOG_2 / 2 + self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            + mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-_logdet_pd(-2 * x) + _LOG_2 * p) + mvlgamma(y + (p + 1) / 2, p)
