"""Decompositions of reductions into core ones (see ``ember.core.aten.lowering``): the NaN-ignoring
forms, the boolean ones, the moments built on ``var``, and the norms."""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core.aten.lowering import lowered
from ember.core.aten.reductions import counting, extrema, norms, reductions, statistics  # noqa: F401  (defines the ops)
from ember.core.dispatch import ops
from ember.core.pointwise import type_name

aten = ops.aten


def _dims(self, dim) -> list[int]:
    if dim is None:
        return list(range(self.ndim))
    return [dim] if isinstance(dim, int) else list(dim)


@lowered(aten.sum.default)
def _sum(self, *, dtype=None):
    return aten.sum.dim_IntList(self, list(range(self.ndim)), dtype=dtype)


def _without_nans(self):
    if not self.is_floating_point():
        return self
    return aten.where.self(aten.isnan.default(self), aten.full_like.default(self, 0), self)


@lowered(aten.nansum.default)
def _nansum(self, dim=None, keepdim=False, *, dtype=None):
    return aten.sum.dim_IntList(_without_nans(self), _dims(self, dim), keepdim, dtype=dtype)


@lowered(aten.nanmean.default)
def _nanmean(self, dim=None, keepdim=False, *, dtype=None):
    if not (self.is_floating_point() or self.is_complex()):
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{D.SCALAR_TYPE_NAMES[self.dtype]}"
        )
    dims = _dims(self, dim)
    total = aten.sum.dim_IntList(_without_nans(self), dims, keepdim, dtype=dtype)
    present = aten.logical_not.default(aten.isnan.default(self))
    return total / aten.sum.dim_IntList(present, dims, keepdim, dtype=total.dtype)


def _all(self, dims, keepdim):
    result = aten.logical_not.default(aten.any.dims(aten.logical_not.default(self), dims, keepdim))
    return aten._to_copy.default(result, dtype=D.uint8) if self.dtype is D.uint8 else result


lowered(aten.all.default)(lambda self: _all(self, None, False))
lowered(aten.all.dim)(lambda self, dim, keepdim=False: _all(self, [dim], keepdim))
lowered(aten.all.dims)(lambda self, dim=None, keepdim=False: _all(self, dim, keepdim))


def _count_nonzero(self, dims):
    nonzero = aten.ne.Tensor(self, aten.full_like.default(self, 0))
    return aten.sum.dim_IntList(nonzero, dims, dtype=D.int64)


lowered(aten.count_nonzero.default)(lambda self, dim=None: _count_nonzero(self, _dims(self, dim)))
lowered(aten.count_nonzero.dim_IntList)(lambda self, dim: _count_nonzero(self, list(dim)))


@lowered(aten.logsumexp.default)
def _logsumexp(self, dim, keepdim=False):
    if not self.is_floating_point():
        self = aten._to_copy.default(self, dtype=D.float32)
    dims = _dims(self, dim)
    if self.numel() == 0:
        return aten.log.default(aten.sum.dim_IntList(aten.exp.default(self), dims, keepdim))
    top = aten.amax.default(self, dims, True)
    # A row of infinities would give inf - inf: shift those rows by 0 instead.
    top = aten.where.self(aten.isinf.default(top), aten.full_like.default(top, 0), top)
    total = aten.sum.dim_IntList(aten.exp.default(self - top), dims, True)
    result = aten.log.default(total) + top
    return result if keepdim else aten.squeeze.dims(result, dims)


lowered(aten.max.default)(lambda self: _whole(self, aten.amax.default, "max"))
lowered(aten.min.default)(lambda self: _whole(self, aten.amin.default, "min"))


def _whole(self, reduce, name):
    if self.numel() == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
            "with the 'dim' argument."
        )
    return reduce(self, list(range(self.ndim)))


@lowered(aten.aminmax.default)
def _aminmax(self, *, dim=None, keepdim=False):
    dims = _dims(self, dim)
    return aten.amin.default(self, dims, keepdim), aten.amax.default(self, dims, keepdim)


@lowered(aten.std.correction)
def _std(self, dim=None, *, correction=None, keepdim=False):
    return aten.sqrt.default(aten.var.correction(self, dim, correction=correction, keepdim=keepdim))


@lowered(aten.var_mean.correction)
def _var_mean(self, dim=None, *, correction=None, keepdim=False):
    var = aten.var.correction(self, dim, correction=correction, keepdim=keepdim)
    return var, aten.mean.dim(self, dim, keepdim)


@lowered(aten.std_mean.correction)
def _std_mean(self, dim=None, *, correction=None, keepdim=False):
    var = aten.var.correction(self, dim, correction=correction, keepdim=keepdim)
    return aten.sqrt.default(var), aten.mean.dim(self, dim, keepdim)


@lowered(aten.linalg_vector_norm.default)
def _vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None):
    if self.dtype.category < D.FLOATING:
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {type_name(self.dtype)}"
        )
    result = dtype if dtype is not None else self.dtype
    wide = D.float32 if result in (D.float16, D.bfloat16) else result  # accumulated in float32, as the kernel does
    if self.dtype is not wide:
        self = aten._to_copy.default(self, dtype=wide)
    norm = _vector_norm_of(self, norms._ord(ord), dim, keepdim)
    return aten._to_copy.default(norm, dtype=result) if norm.dtype is not result else norm


def _vector_norm_of(self, ord, dim, keepdim):
    dims = _dims(self, dim)
    size = aten.abs.default(self)
    if ord == math.inf:
        return aten.amax.default(size, dims, keepdim)
    if ord == -math.inf:
        return aten.amin.default(size, dims, keepdim)
    if ord == 0:
        nonzero = aten.ne.Tensor(size, aten.full_like.default(size, 0))
        return aten.sum.dim_IntList(nonzero, dims, keepdim, dtype=size.dtype)
    if ord == 1:
        return aten.sum.dim_IntList(size, dims, keepdim)
    if ord == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(size * size, dims, keepdim))
    return aten.sum.dim_IntList(size**ord, dims, keepdim) ** (1.0 / ord)


@lowered(aten.nuclear_norm.dim)
def _nuclear_norm(self, dim, keepdim=False):
    moved = aten.movedim.intlist(self, list(dim), [-2, -1])
    values = aten.linalg_svdvals.default(moved)
    total = aten.sum.dim_IntList(values, [-1])
    if keepdim:
        first, second = sorted(d % self.ndim for d in dim)
        total = aten.unsqueeze.default(aten.unsqueeze.default(total, first), second)
    return total


def _counts(index, bins: int, weights=None, keep=None):
    """How many of ``index`` fall on each of ``0..bins-1`` (weighted, or where ``keep``), by comparison."""
    hits = aten.eq.Tensor(
        aten.unsqueeze.default(index, 1), aten.arange.start_step(0, bins, 1, dtype=D.int64, device=index.device)
    )
    if keep is not None:
        hits = aten.logical_and.default(hits, aten.unsqueeze.default(keep, 1))
    if weights is None:
        return aten.sum.dim_IntList(hits, [0])
    zero = aten.zeros.default([], dtype=weights.dtype, device=weights.device)
    return aten.sum.dim_IntList(aten.where.self(hits, aten.unsqueeze.default(weights, 1), zero), [0])


@lowered(aten.bincount.default)
def _bincount(self, weights=None, minlength=0):
    dtype = counting._check_bincount(self, weights, minlength)
    n = minlength
    if self.numel() > 0:  # the length is read from the values: a data-dependent size
        if int(aten.min.default(self)) < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        n = max(int(aten.max.default(self)) + 1, minlength)
    index = aten._to_copy.default(self, dtype=D.int64)
    w = None if weights is None else aten._to_copy.default(weights, dtype=dtype)
    return _counts(index, n, w)


@lowered(aten.histc.default)
def _histc(self, bins=100, min=0, max=0):
    counting._check_histc(self, bins, min, max)
    x = aten.view.default(aten.clone.default(self, memory_format="contiguous_format"), [-1])
    low, high = float(min), float(max)
    if low == high and x.numel() > 0:  # the range is read from the values
        low, high = float(aten.min.default(x)), float(aten.max.default(x))
        if math.isnan(low) or math.isnan(high):
            low = high = math.nan
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{counting._fmt(low)}, {counting._fmt(high)}] is not finite")

    def scalar(v):
        return aten.full.default([], v, dtype=self.dtype, device=self.device)

    lo, hi = scalar(low), scalar(high)
    keep = aten.logical_and.default(aten.ge.Tensor(x, lo), aten.le.Tensor(x, hi))
    position = aten.div.Tensor(aten.mul.Tensor(aten.sub.Tensor(x, lo), scalar(bins)), aten.sub.Tensor(hi, lo))
    index = aten.clamp_max.default(aten._to_copy.default(position, dtype=D.int64), bins - 1)
    return aten._to_copy.default(_counts(index, bins, keep=keep), dtype=self.dtype)
