"""Reductions and scans PyTorch offers as functions over other ops: ``trace``, ``dist``, ``renorm``,
``quantile``/``nanquantile``, ``cummax``/``cummin``, ``logcumsumexp`` and ``histogram``.

Each is written over existing ops, so autograd, vmap and every dispatch mode see the parts. Where
PyTorch's gradient goes to a chosen element (``cummax``, ``quantile``), the indices are found first
and the values gathered through them, so the gradient lands where PyTorch's does.
"""

from __future__ import annotations

import builtins
import math

from ember.core import dtypes as D
from ember.core.api import functions, method, public
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim
from ember.core.promotion import get_default_dtype
from ember.core.return_types import cummax as cummax_result
from ember.core.return_types import cummin as cummin_result
from ember.core.return_types import histogram as histogram_result
from ember.core.return_types import histogramdd as histogramdd_result
from ember.core.tensor import Tensor

aten = ops.aten


def _where(condition: Tensor, a, b) -> Tensor:
    return functions["where"](condition, a, b)


# -- trace, dist, renorm -----------------------------------------------------------------------------------


@public("trace")
@method("trace")
def trace(input: Tensor) -> Tensor:
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()


@public("dist")
@method("dist")
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    return aten.linalg_vector_norm.default(input - other, p)


def _renorm_factor(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point or complex input, but got {input.dtype}")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = normalize_dim(dim, input.ndim)
    others = [d for d in range(input.ndim) if d != dim]
    norm = aten.linalg_vector_norm.default(input, p, others, True)
    # PyTorch's factor: rows over maxnorm are scaled to maxnorm / (norm + 1e-7); the rest keep 1.
    return _where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


@public("renorm")
@method("renorm")
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    return input * _renorm_factor(input, p, dim, maxnorm)


@method("renorm_")
def _renorm_(self: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    return self.copy_(renorm(self.clone(), p, dim, maxnorm))  # autograd keeps the clone, not self


# -- quantile, nanquantile ---------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name: str, input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. Got {interpolation}"
        )
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    qs = input.new_tensor([q]) if scalar_q else q
    if not scalar_q and qs.dtype is not input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if qs.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    in_range = (0 <= q <= 1) if scalar_q else not bool(((qs < 0) | (qs > 1)).any())
    if not in_range:
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if dim is None:
        work, dim_ = input.reshape(-1), 0
    else:
        dim_ = normalize_dim(dim, input.ndim)
        work = input
    sorted_ = work.sort(dim=dim_)[0].movedim(dim_, -1)  # NaN sort last
    n = sorted_.shape[-1]
    nans = sorted_.isnan()
    if ignore_nan:
        count = (~nans).sum(-1, keepdim=True)
        last = (count - 1).clamp(min=0)
    else:
        count = sorted_.new_full(tuple(sorted_.shape[:-1]) + (1,), n).to(D.int64)
        last = count - 1
    qv = qs.reshape((-1,) + (1,) * sorted_.ndim)  # (Q, ..., 1)
    rank = qv * last.to(input.dtype)
    if interpolation == "lower":
        rank = rank.floor()
    elif interpolation == "higher":
        rank = rank.ceil()
    elif interpolation == "nearest":
        rank = rank.round()
    lo = rank.floor().to(D.int64).clamp(0, max(n - 1, 0))
    hi = rank.ceil().to(D.int64).clamp(0, max(n - 1, 0))
    expanded = sorted_.expand((qv.shape[0],) + tuple(sorted_.shape))
    below = expanded.gather(-1, lo)
    above = expanded.gather(-1, hi)
    if interpolation == "midpoint":
        value = below + (above - below) * 0.5
    else:
        value = below.lerp(above, rank - lo.to(input.dtype))
    if ignore_nan:
        value = _where(count == 0, float("nan"), value)
    else:
        value = _where(nans.any(-1, keepdim=True), float("nan"), value)
    value = value.squeeze(-1)  # (Q, ...rest)
    if keepdim:
        if dim is None:
            value = value.reshape((value.shape[0],) + (1,) * input.ndim)
        else:
            value = value.unsqueeze(dim_ + 1)
    return value.squeeze(0) if scalar_q or qs.ndim == 0 else value


@public("quantile")
@method("quantile")
def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@public("nanquantile")
@method("nanquantile")
def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


# -- cummax, cummin, logcumsumexp --------------------------------------------------------------------------


def _cumulative_extreme(input: Tensor, dim: int, larger: bool):
    dim = normalize_dim(dim, max(input.ndim, 1))
    if input.ndim == 0:
        return input.clone(), input.new_zeros((), dtype=D.int64)
    moved = input.detach().movedim(dim, -1)
    n = moved.shape[-1]
    indices = []
    if n:
        best = moved[..., 0]
        where = best.new_zeros(tuple(best.shape), dtype=D.int64)
        indices.append(where)
        for i in range(1, n):
            x = moved[..., i]
            better = (x >= best) if larger else (x <= best)
            if x.dtype.is_floating_point:  # a NaN is kept once reached; a later NaN takes its place
                better = x.isnan() | (better & ~best.isnan())
            best = _where(better, x, best)
            where = _where(better, i, where)
            indices.append(where)
        index = ops.aten.stack.default(indices, -1).movedim(-1, dim)
    else:
        index = input.new_zeros(tuple(input.shape), dtype=D.int64)
    return input.gather(dim, index), index


@public("cummax")
@method("cummax")
def cummax(input: Tensor, dim: int):
    return cummax_result(*_cumulative_extreme(input, dim, larger=True))


@public("cummin")
@method("cummin")
def cummin(input: Tensor, dim: int):
    return cummin_result(*_cumulative_extreme(input, dim, larger=False))


@public("logcumsumexp")
@method("logcumsumexp")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    if not input.dtype.is_floating_point:
        input = input.to(get_default_dtype())
    if input.ndim == 0:
        return input.clone()
    dim = normalize_dim(dim, input.ndim)
    # A prefix scan of logaddexp by doubling (Hillis-Steele): log2(n) steps, each stable, as every
    # step adds two values already in log space.
    out, n, step = input, input.shape[dim], 1
    while step < n:
        head = out.narrow(dim, 0, step)
        tail = functions["logaddexp"](out.narrow(dim, step, n - step), out.narrow(dim, 0, n - step))
        out = functions["cat"]([head, tail], dim)
        step *= 2
    return out if out is not input else input.clone()


# -- histogram ---------------------------------------------------------------------------------------------


def _edges(column: Tensor, bins, span, dtype) -> Tensor:
    """One dim's bin edges: given, or ``bins`` equal bins over ``span`` or the values' range."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension")
        return bins.to(dtype)
    if bins <= 0:
        raise RuntimeError("torch.histogram(): bins must be > 0")
    if span is not None:
        low, high = float(span[0]), float(span[1])
    elif column.numel():
        low, high = float(column.min()), float(column.max())
    else:
        low, high = 0.0, 0.0
    if low > high:
        raise RuntimeError("torch.histogram(): min should not exceed max")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histogram(): range of [{low}, {high}] is not finite")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return ops.aten.linspace.default(low, high, bins + 1, dtype=dtype)


def _bin_index(column: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's bin (the last edge at or below it; the right-most edge closes the last bin) and
    whether it falls inside the edges."""
    nbins = edges.numel() - 1
    index = ops.aten.searchsorted.Tensor(edges, column.detach(), right=True) - 1
    index = _where(column == edges[-1], nbins - 1, index)
    inside = (column >= edges[0]) & (column <= edges[-1]) & (index >= 0) & (index < nbins)
    return _where(inside, index, 0), inside


@public("histogram")
@method("histogram")
def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None, density: bool = False):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, {input.dtype}")
    flat = input.reshape(-1)
    edges = _edges(flat, bins, range, input.dtype)
    index, inside = _bin_index(flat, edges)
    w = flat.new_ones(tuple(flat.shape)) if weight is None else weight.reshape(-1).to(input.dtype)
    hist = flat.new_zeros((edges.numel() - 1,)).index_add(0, index, _where(inside, w, 0.0))
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return histogram_result(hist, edges)


@public("histogramdd")
def histogramdd(input: Tensor, bins=10, *, range=None, weight: Tensor | None = None, density: bool = False):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogramdd: input tensor should be floating point, got {input.dtype}")
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    ndims = input.shape[-1]
    points = input.reshape(-1, ndims)
    per_dim = [bins] * ndims if isinstance(bins, int) else list(bins)
    if len(per_dim) != ndims:
        raise RuntimeError(
            f"torch.histogramdd: expected {ndims} sequences of bin edges for each of the {ndims} dimensions of "
            f"the histogram but got {len(per_dim)}"
        )
    if range is not None and len(range) != 2 * ndims:
        raise RuntimeError(
            f"torch.histogramdd: for a {ndims}-dimensional histogram range should have {2 * ndims} elements"
        )
    edges = [
        _edges(points[:, d], per_dim[d], None if range is None else range[2 * d : 2 * d + 2], input.dtype)
        for d in builtins.range(ndims)
    ]
    sizes = [e.numel() - 1 for e in edges]
    flat_index = points.new_zeros((points.shape[0],), dtype=D.int64)
    inside = points.new_ones((points.shape[0],), dtype=D.bool_)
    for d in builtins.range(ndims):
        index, ok = _bin_index(points[:, d], edges[d])
        flat_index = flat_index * sizes[d] + index
        inside = inside & ok
    w = points.new_ones((points.shape[0],)) if weight is None else weight.reshape(-1).to(input.dtype)
    hist = points.new_zeros((math.prod(sizes),)).index_add(0, flat_index, _where(inside, w, 0.0)).reshape(sizes)
    if density:
        volume = hist.new_ones(tuple(sizes))
        for d in builtins.range(ndims):
            shape = [1] * ndims
            shape[d] = sizes[d]
            volume = volume * (edges[d][1:] - edges[d][:-1]).reshape(shape)
        hist = hist / (hist.sum() * volume)
    return histogramdd_result(hist, tuple(edges))
