"""Transforms onto structured spaces (simplex, Cholesky factors, concatenations); exported from ``transforms``."""

from __future__ import annotations

import math

import ember.nn.functional as F
from ember.core.tensor import Tensor

from . import constraints
from ._ember import ember
from ._linalg import cholesky, diag_embed
from .transforms import Transform, _clipped_sigmoid
from .utils import tril_matrix_to_vec, vec_to_tril_matrix


class SoftmaxTransform(Transform):
    """x -> softmax(x) on the last dim (not bijective: the inverse is defined up to a constant)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    def __hash__(self):
        return hash(type(self))

    def _call(self, x):
        logprobs = x
        probs = (logprobs - logprobs.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape


class StickBreakingTransform(Transform):
    """R^(K-1) -> the K-simplex by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    def __hash__(self):
        return hash(type(self))

    def _call(self, x):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        z = _clipped_sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        sf = 1 - y_crop.cumsum(-1)
        sf = ember.clamp(sf, min=ember.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        x = x - offset.log()
        detJ = (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)
        return detJ

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrix -> lower triangular with positive diagonal (exp of the diagonal)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    def __hash__(self):
        return hash(type(self))

    def _call(self, x):
        return x.tril(-1) + diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrix -> positive definite matrix (L L^T of the lower Cholesky transform)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    def __hash__(self):
        return hash(type(self))

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(cholesky(y))


class CorrCholeskyTransform(Transform):
    """R^(D(D-1)/2) -> Cholesky factors of D x D correlation matrices (tanh, then stick breaking per row)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    def __hash__(self):
        return hash(type(self))

    def _call(self, x):
        x = ember.tanh(x)
        eps = ember.finfo(x.dtype).eps
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z = r**2
        z1m_cumprod_sqrt = (1 - z).sqrt().cumprod(-1)
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        y = r * F.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)
        return y

    def _inverse(self, y):
        y_cumsum = 1 - ember.cumsum(y * y, dim=-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], [1, 0], value=1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / (y_cumsum_vec).sqrt()
        x = (t.log1p() - t.neg().log1p()) / 2
        return x

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * (y1m_cumsum_tril).log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too small shape")
        N = shape[-1]
        D = round((0.25 + 2 * N) ** 0.5 + 0.5)
        if D * (D - 1) // 2 != N:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (D, D)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too small shape")
        N, D = shape[-2:]
        if N != D:
            raise ValueError("Input is not square")
        return shape[:-2] + (N * (N - 1) // 2,)


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the i-th piece (of size ``lengths[i]``) along ``dim``."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        assert all(isinstance(t, Transform) for t in tseq)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        if lengths is None:
            lengths = [1] * len(self.transforms)
        self.lengths = list(lengths)
        assert len(self.lengths) == len(self.transforms)
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, x, fn):
        assert -x.dim() <= self.dim < x.dim()
        assert x.size(self.dim) == self.length
        out, start = [], 0
        for trans, length in zip(self.transforms, self.lengths, strict=False):
            out.append(fn(trans, x.narrow(self.dim, start, length)))
            start = start + length
        return ember.cat(out, dim=self.dim)

    def _call(self, x):
        return self._pieces(x, lambda t, v: t(v))

    def _inverse(self, y):
        return self._pieces(y, lambda t, v: t.inv(v))

    def log_abs_det_jacobian(self, x, y):
        assert -x.dim() <= self.dim < x.dim()
        assert x.size(self.dim) == self.length
        assert -y.dim() <= self.dim < y.dim()
        assert y.size(self.dim) == self.length
        logdetjacs = []
        start = 0
        for trans, length in zip(self.transforms, self.lengths, strict=False):
            xslice = x.narrow(self.dim, start, length)
            yslice = y.narrow(self.dim, start, length)
            logdetjac = trans.log_abs_det_jacobian(xslice, yslice)
            if trans.event_dim < self.event_dim:
                logdetjac = logdetjac.reshape(
                    logdetjac.shape[: logdetjac.dim() - (self.event_dim - trans.event_dim)] + (-1,)
                ).sum(-1)
            logdetjacs.append(logdetjac)
            start = start + length
        dim = self.dim
        if dim >= 0:
            dim = dim - x.dim()
        dim = dim + self.event_dim
        if dim < 0:
            return ember.cat(logdetjacs, dim=dim)
        return sum(logdetjacs)

    @property
    def bijective(self):  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies ``tseq[i]`` to the i-th slice along ``dim``."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        assert all(isinstance(t, Transform) for t in tseq)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        assert -x.dim() <= self.dim < x.dim()
        assert x.size(self.dim) == len(self.transforms)
        return ember.stack([t(v) for v, t in zip(self._slice(x), self.transforms, strict=False)], dim=self.dim)

    def _inverse(self, y):
        assert -y.dim() <= self.dim < y.dim()
        assert y.size(self.dim) == len(self.transforms)
        return ember.stack([t.inv(v) for v, t in zip(self._slice(y), self.transforms, strict=False)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        assert -x.dim() <= self.dim < x.dim()
        assert x.size(self.dim) == len(self.transforms)
        assert -y.dim() <= self.dim < y.dim()
        assert y.size(self.dim) == len(self.transforms)
        xs, ys = self._slice(x), self._slice(y)
        return ember.stack(
            [t.log_abs_det_jacobian(a, b) for t, a, b in zip(self.transforms, xs, ys, strict=False)], dim=self.dim
        )

    @property
    def bijective(self):  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """x -> distribution.cdf(x): onto the unit interval."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
