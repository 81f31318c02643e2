"""The masked operations: each replaces the masked-out elements by its identity and runs the plain op.

A mask is a boolean tensor that broadcasts to the input (it may have fewer dimensions, never more);
``mask=None`` means every element is in. An element that is masked out takes the reduction's
identity, the value that leaves the result unchanged (0 for sums, 1 for products, -inf or the
dtype's least value for maxima, ...), so the plain reduction of the filled tensor is the masked
reduction. Reductions without an identity (mean, var, std, median) count the elements that are in
instead; a row with none gives NaN, as in PyTorch. Normalizations (softmax, ...) keep the shape:
their masked-out outputs are what the identity fill gives (0 for softmax).
"""

from __future__ import annotations

import math

from ember.core import dtypes as D
from ember.core import functions as _f
from ember.core.creation import tensor as _tensor
from ember.core.dtype_info import iinfo
from ember.core.surface import strided
from ember.core.tensor import Tensor
from ember.linalg import vector_norm

_PROMOTED_TO_INT64 = (D.uint8, D.bool_, D.int8, D.int16, D.int32)


def _canonical_dim(dim, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative dimensions; None or () means all of them."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _check_strided(name: str, *tensors: Tensor) -> None:
    for t in tensors:
        if t.layout is not strided:
            raise NotImplementedError(f"ember.masked.{name}: only strided tensors are supported (got {t.layout})")


def _input_mask(input: Tensor, mask: Tensor) -> Tensor:
    """``mask`` broadcast to ``input``'s shape, as bool."""
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than of the input)"
            )
        mask = _f["broadcast_to"](mask, tuple(input.shape))
    return mask.to(dtype=D.bool_)


def _identity(name: str, input: Tensor, ord=None) -> Tensor:
    """The value a masked-out element takes in reduction ``name`` on ``input``'s dtype."""
    dtype = input.dtype
    if name in ("sum", "cumsum"):
        value = 0
    elif name in ("prod", "cumprod"):
        value = 1
    elif name in ("amax", "argmax", "logaddexp", "logsumexp", "amin", "argmin"):
        lowest = name not in ("amin", "argmin")
        if dtype.is_floating_point or (dtype.is_complex and name == "logsumexp"):
            value = -math.inf if lowest else math.inf
        elif dtype.is_signed or dtype == D.uint8:
            value = iinfo(dtype).min if lowest else iinfo(dtype).max
        else:
            raise NotImplementedError(f"identity of {name} on {dtype} input")
    elif name == "norm":
        value = math.inf if ord == -math.inf else 0
    elif name == "median":
        return _tensor(math.nan, dtype=dtype if dtype.is_floating_point else D.float32, device=input.device)
    else:
        raise NotImplementedError(f"identity of {name} on {dtype} input")
    return _tensor(value, dtype=dtype, device=input.device)


def _filled(name: str, input: Tensor, mask: Tensor | None, ord=None) -> Tensor:
    """``input`` with its masked-out elements replaced by the identity of ``name``."""
    _check_strided(name, input)
    if mask is None:
        return input
    return _f["where"](_input_mask(input, mask), input, _identity(name, input, ord))


def _sum_dtype(input: Tensor, dtype):
    if dtype is not None:
        return dtype
    return D.int64 if input.dtype in _PROMOTED_TO_INT64 else input.dtype


def sum(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The sum of the elements that are in, over ``dim`` (all by default)."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return _f["sum"](_filled("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The product of the elements that are in, over ``dim`` (all by default)."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = _filled("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):  # prod reduces one dimension at a time
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The running sum along ``dim``; masked-out elements add nothing."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _f["cumsum"](_filled("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The running product along ``dim``; masked-out elements multiply by one."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _f["cumprod"](_filled("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


def amax(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The largest element that is in (-inf, or the dtype's least value, where none is)."""
    dtype = input.dtype if dtype is None else dtype
    filled = _filled("amax", input, mask)
    return _f["amax"](filled, _canonical_dim(dim, filled.ndim), bool(keepdim)).to(dtype=dtype)


def amin(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The smallest element that is in (inf, or the dtype's greatest value, where none is)."""
    dtype = input.dtype if dtype is None else dtype
    filled = _filled("amin", input, mask)
    return _f["amin"](filled, _canonical_dim(dim, filled.ndim), bool(keepdim)).to(dtype=dtype)


def argmax(
    input: Tensor, dim: int | None = None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None
) -> Tensor:
    """The index of the largest element that is in."""
    dtype = input.dtype if dtype is None else dtype
    return _f["argmax"](_filled("argmax", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def argmin(
    input: Tensor, dim: int | None = None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None
) -> Tensor:
    """The index of the smallest element that is in."""
    dtype = input.dtype if dtype is None else dtype
    return _f["argmin"](_filled("argmin", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def _count(input: Tensor, dim, keepdim: bool, mask: Tensor | None) -> Tensor:
    """How many elements are in, per output element."""
    if mask is None:
        ones = _f["ones"](tuple(input.shape), dtype=D.int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim)
    return _input_mask(input, mask).sum(dim=dim, keepdim=bool(keepdim))


def mean(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The mean of the elements that are in; NaN where none is."""
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either "
            f"a floating point or complex dtype. Got: {dtype}"
        )
    _check_strided("mean", input)
    if mask is not None:
        mask = _input_mask(input, mask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, bool(keepdim), mask)


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The median of the elements that are in, along one ``dim``; NaN where none is (floating inputs)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=D.float32)
    output = _f["nanmedian"](_filled("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if _f["isnan"](output).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return output.to(dtype=dtype)


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """``log(sum(exp(x)))`` of the elements that are in; -inf where none is."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return _f["logsumexp"](_filled("logsumexp", input, mask), dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(
    input: Tensor,
    other: Tensor,
    *,
    dtype=None,
    input_mask: Tensor | None = None,
    other_mask: Tensor | None = None,
) -> Tensor:
    """``log(exp(input) + exp(other))``, each operand's masked-out elements taken as -inf."""
    dtype = input.dtype if dtype is None else dtype
    first = _filled("logaddexp", input, input_mask)
    second = _filled("logaddexp", other, other_mask)
    return _f["logaddexp"](first, second).to(dtype=dtype)


def norm(
    input: Tensor,
    ord: float | None = 2.0,
    dim=None,
    *,
    keepdim: bool | None = False,
    dtype=None,
    mask: Tensor | None = None,
) -> Tensor:
    """The vector ``ord``-norm of the elements that are in."""
    dtype = input.dtype if dtype is None else dtype
    filled = _filled("norm", input, mask, ord)
    return vector_norm(filled, ord, _canonical_dim(dim, input.ndim), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt: bool) -> Tensor:
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    if correction is None:
        correction = 1.0 if unbiased is None or unbiased else 0.0
    correction = float(correction)
    if dtype is None:
        dtype = input.dtype if (input.dtype.is_floating_point or input.dtype.is_complex) else D.float32
    compute_dtype = dtype if (dtype.is_floating_point or dtype.is_complex) else D.float32
    _check_strided("std" if take_sqrt else "var", input)
    if mask is not None:
        mask = _input_mask(input, mask)
    count = _count(input, dim, True, mask)
    centered = input - sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    total = sum(centered * centered.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=mask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if correction != 0:
        count = count.to(compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype) - correction
        count = _f["maximum"](count, count.new_zeros(()))
    output = (total / count).to(dtype=dtype)
    return _f["sqrt"](output) if take_sqrt else output


def var(
    input: Tensor,
    dim=None,
    unbiased: bool | None = None,
    *,
    correction: float | None = None,
    keepdim: bool | None = False,
    dtype=None,
    mask: Tensor | None = None,
) -> Tensor:
    """The variance of the elements that are in (``correction`` 1 by default); NaN where none is."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(
    input: Tensor,
    dim=None,
    unbiased: bool | None = None,
    *,
    correction: int | None = None,
    keepdim: bool | None = False,
    dtype=None,
    mask: Tensor | None = None,
) -> Tensor:
    """The standard deviation of the elements that are in; NaN where none is."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Softmax along ``dim`` over the elements that are in; the others get 0 (a row with none, NaN)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _f["softmax"](_filled("amax", input, mask), d, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Log-softmax along ``dim`` over the elements that are in; the others get -inf."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _f["log_softmax"](_filled("amax", input, mask), d, dtype=dtype)


def softmin(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Softmin along ``dim`` (softmax of the negation) over the elements that are in."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _f["softmax"](-_filled("amin", input, mask), d, dtype=dtype)


def normalize(
    input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None, mask: Tensor | None = None
) -> Tensor:
    """``input`` divided by its masked ``ord``-norm along ``dim`` (at least ``eps``); masked-out elements give 0."""
    dtype = input.dtype if dtype is None else dtype
    filled = _filled("sum", input, mask)
    size = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return filled / _f["maximum"](size, size.new_full((), eps))
