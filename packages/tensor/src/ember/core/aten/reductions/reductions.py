"""Reductions: ``sum``, ``mean``, ``prod``, ``nansum``/``nanmean``, ``all``/``any``, ``count_nonzero``
and ``logsumexp``, with their ``out=`` forms (the extrema are in ``extrema.py``).

Each overload has a meta function and a CPU kernel that share one plan: the arguments' checks, the
result's shape (``ember.core.reduction``) and dtype; the meta function returns an empty tensor of that
plan, the kernel computes it with NumPy. Dtype rules are
PyTorch's: sums and products of integers and bools are int64, ``dtype=`` casts the input first,
``mean`` needs a floating or complex dtype, ``all``/``any`` keep uint8 and give bool otherwise.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.dispatch import ops as _ops
from ember.core.fastpath import native
from ember.core.pointwise import type_name, unsupported
from ember.core.promotion import get_default_dtype
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

TAGS = ("reduction", "core")
OUT_TAGS = ("reduction", "out")


# -- sum, prod, mean ------------------------------------------------------------------------------


def _sum_dtype(self: Tensor, dtype) -> D.dtype:
    dtype = R.check_dtype_arg(dtype)
    if dtype is not None:
        return dtype
    return D.int64 if self.dtype.category <= D.INTEGRAL else self.dtype


# Float dtypes that sum and multiply in themselves (see _fold_accumulator).
_OWN_ACCUMULATOR = (D.float32, D.float64)


def _fold_accumulator(result: D.dtype) -> np.dtype:
    # PyTorch sums and multiplies float32 in float32 (a cascade sum); NumPy's pairwise sum in
    # float32 is as accurate and twice as fast as a float64 accumulator.
    if result is D.float32 or result is D.complex64:
        return result.np
    return R.accumulator(result)


def _fold_plan(self: Tensor, dim, keepdim: bool, dtype) -> tuple[R.Plan, D.dtype]:
    return R.plan(self, dim, keepdim), _sum_dtype(self, dtype)


def _fold_meta(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, result = _fold_plan(self, dim, keepdim, dtype)
    return empty(p.shape, result, self.device)


def _fold(ufunc):
    def kernel(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
        array = self._array
        shortcut = dtype is None and type(dim) is int and self.dtype in _OWN_ACCUMULATOR
        if shortcut and -array.ndim <= dim < array.ndim:
            # One dim of a float tensor (a bias gradient, a mean over features): the plan's result,
            # in the tensor's own dtype and accumulator, without the plan.
            token = silence()
            try:
                # (trailing_sum folds only a last dim: others skip the call)
                d = dim % array.ndim
                folded = R.trailing_sum(array, (d,)) if ufunc is np.add and d == array.ndim - 1 else None
                if folded is None:
                    folded = ufunc.reduce(array, axis=dim, keepdims=bool(keepdim))
                elif keepdim:
                    folded = folded[..., None]
            finally:
                restore(token)
            return from_array(np.asarray(folded), self.dtype)
        p, result = _fold_plan(self, dim, keepdim, dtype)

        def compute():
            values = R.values(self, result)
            if ufunc is np.add and values.dtype == result.np:
                total = R.trailing_sum(values, p.axes)
                if total is not None:
                    return total
            return ufunc.reduce(values, axis=p.axes, dtype=_fold_accumulator(result))

        return R.computed(p.shape, result, compute)

    return kernel


_sum = _fold(np.add)
_prod = _fold(np.multiply)

sum_ = define("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", TAGS)
sum_dim = define(
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", TAGS
)
sum_out = define(
    "sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
    OUT_TAGS,
)
sum_all_out = define("sum.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS)
prod_ = define("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", TAGS)
prod_dim = define("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", TAGS)
prod_out = define(
    "prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
    OUT_TAGS,
)
prod_all_out = define("prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS)


def _sum_all(self: Tensor, *, dtype=None) -> Tensor:
    if dtype is None and (self.dtype is D.float32 or self.dtype is D.float64):
        # The commonest reduction, kept short: a 0-dim result of the same float dtype.
        token = silence()
        try:
            total = np.add.reduce(self._array, axis=None)
        finally:
            restore(token)
        return from_array(np.asarray(total), self.dtype)
    return _sum(self, None, False, dtype=dtype)


def _everything(fold):
    """``sum``/``prod`` of every element, from the kernel (or meta function) taking ``dim``."""
    return lambda self, *, dtype=None: fold(self, None, False, dtype=dtype)


def _one_dim(fold):
    """``prod.dim_int``'s signature (one ``dim``, no default) for a fold."""
    return lambda self, dim, keepdim=False, *, dtype=None: fold(self, dim, keepdim, dtype=dtype)


R.register(sum_, _sum_all, _everything(_fold_meta))
R.register(sum_dim, _sum, _fold_meta)
if native is not None:
    # ``x.sum(0)`` of a float tensor in C: the same additions in the same order as NumPy's.
    sum_dim.register_kernel("cpu")(native.column_sum(_sum, D.float32, D.float64))
R.register(prod_, _everything(_prod), _everything(_fold_meta))
R.register(prod_dim, _one_dim(_prod), _one_dim(_fold_meta))


def _with_out_dtype(kernel, write):
    """``out=`` for sum-like ops: without ``dtype`` the result takes the out tensor's dtype.
    ``write`` is ``R.write_out`` for a CPU kernel and ``R.fit_out`` for a meta function."""

    def out_kernel(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out) -> Tensor:
        if dtype is None and isinstance(out, Tensor):
            dtype = out.dtype
        R.check_out_dtype(out, R.check_dtype_arg(dtype))
        return write(out, kernel(self, dim, keepdim, dtype=dtype))

    return out_kernel


def _everything_out(fold_out):
    return lambda self, *, dtype=None, out: fold_out(self, None, False, dtype=dtype, out=out)


def _one_dim_out(fold_out):
    return lambda self, dim, keepdim=False, *, dtype=None, out: fold_out(self, dim, keepdim, dtype=dtype, out=out)


_sum_out_cpu, _sum_out_meta = _with_out_dtype(_sum, R.write_out), _with_out_dtype(_fold_meta, R.fit_out)
_prod_out_cpu, _prod_out_meta = _with_out_dtype(_prod, R.write_out), _with_out_dtype(_fold_meta, R.fit_out)
R.register(sum_out, _sum_out_cpu, _sum_out_meta)
R.register(sum_all_out, _everything_out(_sum_out_cpu), _everything_out(_sum_out_meta))
R.register(prod_out, _one_dim_out(_prod_out_cpu), _one_dim_out(_prod_out_meta))
R.register(prod_all_out, _everything_out(_prod_out_cpu), _everything_out(_prod_out_meta))


def _mean_dtype(self: Tensor, dtype) -> D.dtype:
    dtype = R.check_dtype_arg(dtype)
    result = self.dtype if dtype is None else dtype
    if result.category < D.FLOATING:
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(
            f"mean(): could not infer output dtype. {which} dtype must be either a floating point or complex dtype. "
            f"Got: {type_name(result)}"
        )
    return result


mean_ = define("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", TAGS)
mean_dim = define("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", TAGS)
mean_out = define(
    "mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
    OUT_TAGS,
)
mean_dtype_out = define(
    "mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS
)


def _mean_plan(self: Tensor, dim, keepdim: bool, dtype) -> tuple[R.Plan, D.dtype]:
    return R.plan(self, dim, keepdim), _mean_dtype(self, dtype)


def _mean_meta(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, result = _mean_plan(self, dim, keepdim, dtype)
    return empty(p.shape, result, self.device)


def _mean(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, result = _mean_plan(self, dim, keepdim, dtype)

    def compute():
        values = R.values(self, result)
        total = R.trailing_sum(values, p.axes) if values.dtype == result.np else None
        if total is None:
            total = np.add.reduce(values, axis=p.axes, dtype=R.accumulator(result))
        return total / p.count

    return R.computed(p.shape, result, compute)


def _mean_with_out(kernel, write):
    def out_kernel(self: Tensor, dim, keepdim: bool = False, *, dtype=None, out) -> Tensor:
        _mean_dtype(self, dtype)
        if dtype is None and isinstance(out, Tensor):
            if out.dtype.category < D.FLOATING:
                raise RuntimeError(
                    f"result type {type_name(self.dtype)} can't be cast to the desired output type "
                    f"{type_name(out.dtype)}"
                )
            dtype = out.dtype
        R.check_out_dtype(out, dtype)
        return write(out, kernel(self, dim, keepdim, dtype=dtype))

    return out_kernel


_mean_out_cpu, _mean_out_meta = _mean_with_out(_mean, R.write_out), _mean_with_out(_mean_meta, R.fit_out)
R.register(mean_dim, _mean, _mean_meta)
R.register(mean_, _everything(_mean), _everything(_mean_meta))
R.register(mean_out, _mean_out_cpu, _mean_out_meta)
R.register(mean_dtype_out, _everything_out(_mean_out_cpu), _everything_out(_mean_out_meta))


# -- nansum, nanmean -------------------------------------------------------------------------------

nansum_op = define(
    "nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", TAGS
)
nansum_out = define(
    "nansum.out(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) "
    "-> Tensor(a!)",
    OUT_TAGS,
)
nanmean_op = define(
    "nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", TAGS
)
nanmean_out = define(
    "nanmean.out(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) "
    "-> Tensor(a!)",
    OUT_TAGS,
)


def _without_nan(self: Tensor, result: D.dtype) -> np.ndarray:
    """The input cast to ``result``, NaNs (of the input) as zeros."""
    array = R.values(self, result)
    if self.dtype.category == D.FLOATING:
        array = np.where(np.isnan(R.values(self)), 0, array)
    return array


def _nansum_plan(self: Tensor, dim, keepdim: bool, dtype) -> tuple[R.Plan, D.dtype]:
    if self.dtype.category == D.COMPLEX:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    p = R.plan(self, dim, keepdim)
    result = _sum_dtype(self, dtype)
    if result.category == D.COMPLEX:
        raise unsupported("nansum", result)
    return p, result


def _nansum_meta(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, result = _nansum_plan(self, dim, keepdim, dtype)
    return empty(p.shape, result, self.device)


def _nansum(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, result = _nansum_plan(self, dim, keepdim, dtype)
    return R.computed(
        p.shape,
        result,
        lambda: np.add.reduce(_without_nan(self, result), axis=p.axes, dtype=R.accumulator(result)),
    )


R.register(nansum_op, _nansum, _nansum_meta)
R.register(nansum_out, _with_out_dtype(_nansum, R.write_out), _with_out_dtype(_nansum_meta, R.fit_out))


def _nanmean_plan(self: Tensor, dim, keepdim: bool, dtype) -> tuple[R.Plan, D.dtype]:
    if self.dtype.category < D.FLOATING:
        raise RuntimeError(
            f"nanmean(): expected input to have floating point or complex dtype but got {type_name(self.dtype)}"
        )
    if self.dtype.category == D.COMPLEX:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    p = R.plan(self, dim, keepdim)
    result = R.check_dtype_arg(dtype) or self.dtype
    if result.category == D.COMPLEX:
        raise unsupported("nansum", result)
    return p, result


def _nanmean_meta(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, result = _nanmean_plan(self, dim, keepdim, dtype)
    return empty(p.shape, result, self.device)


def _nanmean(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p, result = _nanmean_plan(self, dim, keepdim, dtype)

    def compute():
        total = np.add.reduce(_without_nan(self, result), axis=p.axes, dtype=R.accumulator(result))
        return total / np.add.reduce(~np.isnan(R.values(self)), axis=p.axes, dtype=np.int64)

    return R.computed(p.shape, result, compute)


def _plain_out(kernel, write):
    """``out=`` for ops whose result dtype does not depend on ``out``."""
    return lambda self, dim=None, keepdim=False, *, dtype=None, out: write(out, kernel(self, dim, keepdim, dtype=dtype))


R.register(nanmean_op, _nanmean, _nanmean_meta)
R.register(nanmean_out, _plain_out(_nanmean, R.write_out), _plain_out(_nanmean_meta, R.fit_out))


# -- all, any, count_nonzero ---------------------------------------------------------------------


def _logical(name: str, ufunc):
    def plan(self: Tensor, dim, keepdim: bool) -> tuple[R.Plan, D.dtype]:
        # An empty list of dims reduces nothing here (unlike sum), as in PyTorch.
        return R.plan(self, dim, keepdim, empty_means_all=False), D.uint8 if self.dtype is D.uint8 else D.bool_

    def kernel(self: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        p, result = plan(self, dim, keepdim)
        return R.computed(p.shape, result, lambda: ufunc.reduce(self._array != 0, axis=p.axes))

    def meta(self: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        p, result = plan(self, dim, keepdim)
        return empty(p.shape, result, self.device)

    def with_out(functional, write):
        def out_kernel(self: Tensor, dim=None, keepdim: bool = False, *, out) -> Tensor:
            if isinstance(out, Tensor) and out.dtype not in (D.bool_, D.uint8):
                raise RuntimeError(f"{name} only supports bool tensor for result, got: {type_name(out.dtype)}")
            return write(out, functional(self, dim, keepdim))

        return out_kernel

    def overloads(functional, out_kernel):
        """The six overloads' signatures, over a kernel (or meta function) and its out= form."""
        return (
            lambda self: functional(self),
            lambda self, dim, keepdim=False: functional(self, dim, keepdim),
            functional,
            lambda self, dim, keepdim=False, *, out: out_kernel(self, dim, keepdim, out=out),
            out_kernel,
            lambda self, *, out: out_kernel(self, out=out),
        )

    schemas = (
        (f"{name}(Tensor self) -> Tensor", TAGS),
        (f"{name}.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", TAGS),
        (f"{name}.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", TAGS),
        (f"{name}.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS),
        (
            f"{name}.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
            OUT_TAGS,
        ),
        (f"{name}.all_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS),
    )
    cpu = overloads(kernel, with_out(kernel, R.write_out))
    metas = overloads(meta, with_out(meta, R.fit_out))
    for (schema, tags), cpu_fn, meta_fn in zip(schemas, cpu, metas, strict=True):
        R.register(define(schema, tags), cpu_fn, meta_fn)


_logical("all", np.logical_and)
_logical("any", np.logical_or)


def _count_nonzero(self: Tensor, dim=None) -> Tensor:
    p = R.plan(self, dim, False)
    return R.computed(p.shape, D.int64, lambda: np.count_nonzero(self._array, axis=p.axes))


def _count_nonzero_meta(self: Tensor, dim=None) -> Tensor:
    return empty(R.plan(self, dim, False).shape, D.int64, self.device)


R.register(define("count_nonzero(Tensor self, int? dim=None) -> Tensor", TAGS), _count_nonzero, _count_nonzero_meta)
R.register(
    define("count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor", TAGS),
    lambda self, dim: _count_nonzero(self, dim),
    lambda self, dim: _count_nonzero_meta(self, dim),
)


# -- logsumexp ----------------------------------------------------------------------------------------

logsumexp_op = define("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", TAGS)
logsumexp_out = define(
    "logsumexp.out(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS
)


def _logsumexp_plan(self: Tensor, dim, keepdim: bool) -> tuple[R.Plan, D.dtype]:
    result = self.dtype if self.dtype.category >= D.FLOATING else get_default_dtype()
    if R.as_dims(dim) == () and not keepdim and self.ndim > 0 and self.numel() > 0:
        # PyTorch reduces everything but cannot add the maxima (kept as [1, 1, ...]) back into a
        # 0-dim result: an error there too. Empty inputs take another path in PyTorch and work.
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {[1] * self.ndim}")
    return R.plan(self, dim, keepdim), result


def _logsumexp_meta(self: Tensor, dim, keepdim: bool = False) -> Tensor:
    p, result = _logsumexp_plan(self, dim, keepdim)
    return empty(p.shape, result, self.device)


def _logsumexp(self: Tensor, dim, keepdim: bool = False) -> Tensor:
    p, result = _logsumexp_plan(self, dim, keepdim)

    def compute():
        x = R.values(self, result).astype(np.complex128 if result.category == D.COMPLEX else np.float64)
        if x.size == 0:
            return np.full(p.shape, -np.inf)
        real = x.real if np.iscomplexobj(x) else x
        # Shift by the maximum so exp cannot overflow; infinite maxima shift by 0 (inf stays inf).
        shift = np.max(real, axis=p.axes, keepdims=True) if p.axes else real
        shift = np.where(np.isinf(shift), 0, shift)
        total = np.sum(np.exp(x - shift), axis=p.axes, keepdims=True)
        return (np.log(total) + shift).reshape(p.shape)

    return R.computed(p.shape, result, compute)


def _logsumexp_with_out(kernel, write):
    def out_kernel(self: Tensor, dim, keepdim: bool = False, *, out) -> Tensor:
        if isinstance(out, Tensor) and out.dtype.category < D.FLOATING:
            raise RuntimeError(
                f"logsumexp(): Expected floating point type for result tensor, but got: {type_name(out.dtype)}"
            )
        return write(out, kernel(self, dim, keepdim))

    return out_kernel


R.register(logsumexp_op, _logsumexp, _logsumexp_meta)
R.register(logsumexp_out, _logsumexp_with_out(_logsumexp, R.write_out), _logsumexp_with_out(_logsumexp_meta, R.fit_out))


# -- the Python surface -----------------------------------------------------------------------------

_aten = _ops.aten


def _sum_like(name: str, functional, reduced, out_op, all_out):
    def fn(input, dim=None, keepdim=False, *, dtype=None, out=None):
        if dim is None and not keepdim:
            return functional(input, dtype=dtype) if out is None else all_out(input, dtype=dtype, out=out)
        R.dims_arg(dim, name)
        if out is not None:
            return out_op(input, dim, R.keepdim_arg(keepdim), dtype=dtype, out=out)
        return reduced(input, dim, R.keepdim_arg(keepdim), dtype=dtype)

    def as_method(self, dim=None, keepdim=False, *, dtype=None):
        if type(dim) is int and type(keepdim) is bool:  # ``x.sum(0)``: nothing for fn to check
            return reduced(self, dim, keepdim, dtype=dtype)
        if dim is None and not keepdim:
            return functional(self, dtype=dtype)
        return fn(self, dim, keepdim, dtype=dtype)

    fn.__name__ = fn.__qualname__ = as_method.__name__ = as_method.__qualname__ = name
    public(name)(fn)
    method(name)(as_method)


_sum_like("sum", _aten.sum.default, _aten.sum.dim_IntList, _aten.sum.IntList_out, _aten.sum.out)


@public("mean")
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    if dim is None and not keepdim:
        return (
            _aten.mean.default(input, dtype=dtype) if out is None else _aten.mean.dtype_out(input, dtype=dtype, out=out)
        )
    R.dims_arg(dim, "mean")
    if out is not None:
        return _aten.mean.out(input, dim, R.keepdim_arg(keepdim), dtype=dtype, out=out)
    return _aten.mean.dim(input, dim, R.keepdim_arg(keepdim), dtype=dtype)


@method("mean")
def _mean_method(self, dim=None, keepdim=False, *, dtype=None):
    return mean(self, dim, keepdim, dtype=dtype)


_NO_DIM = object()


@public("prod")
def prod(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    if dim is _NO_DIM:
        return _aten.prod.default(input, dtype=dtype) if out is None else _aten.prod.out(input, dtype=dtype, out=out)
    dim = R.int_dim_arg(dim, "prod")
    if out is not None:
        return _aten.prod.int_out(input, dim, R.keepdim_arg(keepdim), dtype=dtype, out=out)
    return _aten.prod.dim_int(input, dim, R.keepdim_arg(keepdim), dtype=dtype)


@method("prod")
def _prod_method(self, dim=_NO_DIM, keepdim=False, *, dtype=None):
    return prod(self, dim, keepdim, dtype=dtype)


def _logical_surface(name: str):
    packet = getattr(_aten, name)

    def fn(input, dim=_NO_DIM, keepdim=False, *, out=None):
        if dim is _NO_DIM or (dim is None and not keepdim):
            return packet.default(input) if out is None else packet.all_out(input, out=out)
        if isinstance(dim, bool):
            raise TypeError(f"{name}(): argument 'dim' must be int or tuple of ints, not bool")
        if isinstance(dim, int | np.integer):
            overload = packet.dim if out is None else packet.out
            dim = int(dim)
        else:
            R.dims_arg(dim, name)
            overload = packet.dims if out is None else packet.dims_out
        if out is None:
            return overload(input, dim, R.keepdim_arg(keepdim))
        return overload(input, dim, R.keepdim_arg(keepdim), out=out)

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, dim=_NO_DIM, keepdim=False: fn(self, dim, keepdim))


_logical_surface("all")
_logical_surface("any")


@public("count_nonzero")
def count_nonzero(input, dim=None):
    if dim is None or (isinstance(dim, int | np.integer) and not isinstance(dim, bool)):
        return _aten.count_nonzero.default(input, None if dim is None else int(dim))
    R.dims_arg(dim, "count_nonzero")
    return _aten.count_nonzero.dim_IntList(input, list(dim))


@method("count_nonzero")
def _count_nonzero_method(self, dim=None):
    return count_nonzero(self, dim)


@public("logsumexp")
def logsumexp(input, dim, keepdim=False, *, out=None):
    R.dims_arg(dim, "logsumexp")
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    if out is not None:
        return _aten.logsumexp.out(input, dim, R.keepdim_arg(keepdim), out=out)
    return _aten.logsumexp.default(input, dim, R.keepdim_arg(keepdim))


@method("logsumexp")
def _logsumexp_method(self, dim, keepdim=False):
    return logsumexp(self, dim, keepdim)


# One overload each, taking every argument: the same surface as sum's, with the same op in both roles.
_sum_like("nansum", nansum_op, nansum_op, nansum_out, nansum_out)
_sum_like("nanmean", nanmean_op, nanmean_op, nanmean_out, nanmean_out)


R.accept_numpy_names(("sum", "mean", "prod", "nansum", "nanmean", "all", "any", "count_nonzero", "logsumexp"))
