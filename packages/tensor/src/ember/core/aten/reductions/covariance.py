"""Differences and second moments: ``diff``, ``cov`` and ``corrcoef``, composites in PyTorch's arithmetic.

``diff`` subtracts neighbours ``n`` times (bool tensors xor them), after joining ``prepend`` and
``append``. ``cov`` treats rows as variables and columns as observations, with frequency and
analytic weights and the ``correction`` PyTorch applies; ``corrcoef`` divides ``cov`` by the
standard deviations and clips the result to [-1, 1].
"""

from __future__ import annotations

import warnings

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.shape.joining import cat
from ember.core.dispatch import define, ops
from ember.core.layout import normalize_dim
from ember.core.reduction import fit_out
from ember.core.tensor import Tensor

aten = ops.aten

diff = define("diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor")
diff_out = define(
    "diff.out(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None, *, Tensor(a!) out) "
    "-> Tensor(a!)",
    ("out",),
)
cov = define("cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) -> Tensor")
corrcoef = define("corrcoef(Tensor self) -> Tensor")


@diff.register_decomposition
def _diff(self: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    if self.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    for extra in (prepend, append):
        if extra is not None and extra.ndim != self.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    dim = normalize_dim(dim, self.ndim)
    if prepend is not None or append is not None:
        self = cat([t for t in (prepend, self, append) if t is not None], dim)
    for _ in range(n):
        size = self._shape[dim]
        if size == 0:
            break
        later, earlier = self.narrow(dim, 1, size - 1), self.narrow(dim, 0, size - 1)
        self = later.logical_xor(earlier) if self.dtype is D.bool_ else later - earlier
    return self


@diff_out.register_decomposition
def _diff_out(self: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None, *, out: Tensor) -> Tensor:
    result = _diff(self, n, dim, prepend, append)
    fit_out(out, result)
    return out.copy_(result)


@public("diff")
def _diff_function(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None, *, out=None) -> Tensor:
    if out is None:
        return diff(input, n, dim, prepend, append)
    return diff_out(input, n, dim, prepend, append, out=out)


@method("diff")
def _diff_method(self: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    return diff(self, n, dim, prepend, append)


def _check_weights(name: str, w: Tensor, observations) -> None:
    if w.ndim > 1:
        raise RuntimeError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} dimensions"
        )
    if w.numel() != observations:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in the input but got "
            f"{w.numel()} != {observations}"
        )


def _warn_dof() -> None:
    warnings.warn(
        "cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of observations.",
        UserWarning,
        stacklevel=4,
    )


@cov.register_decomposition
def _cov(self: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    if self.ndim > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but got an input with {self.ndim} dimensions"
        )
    x = self.reshape((1, -1)) if self.ndim < 2 else self
    observations = x._shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations)
        if fweights.dtype.category > D.INTEGRAL:
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, observations)
        if aweights.dtype.category < D.FLOATING:
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        w = aweights if w is None else w * aweights
    if w is None:  # the counts are known from the shape: nothing is read from the values
        average = x.sum(1) / observations
        norm = observations - correction
        if norm <= 0:
            _warn_dof()
            norm = 0
    else:
        w_sum = w.sum()
        average = (x * w).sum(1) / w_sum
        if aweights is not None and correction != 0:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
        else:
            norm = w_sum - correction
        if float(norm) <= 0:  # a weighted count: read from the weights, as PyTorch does
            _warn_dof()
            norm = norm.clamp_min(0)
    centred = x - average.unsqueeze(1)
    weighted = centred if w is None else centred * w
    return (centred.matmul(weighted.transpose(0, 1)) / norm).squeeze()


@public("cov")
def _cov_function(input: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    return cov(input, correction=correction, fweights=fweights, aweights=aweights)


method("cov")(_cov_function)


@corrcoef.register_decomposition
def _corrcoef(self: Tensor) -> Tensor:
    if self.ndim > 2:
        raise RuntimeError(
            f"corrcoef(): expected input to have two or fewer dimensions but got an input with {self.ndim} dimensions"
        )
    c = _cov(self)
    if c.ndim == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clamp(-1, 1)


@public("corrcoef")
def _corrcoef_function(input: Tensor) -> Tensor:
    return corrcoef(input)


method("corrcoef")(_corrcoef_function)
