"""Reductions: ``sum``, ``mean``, ``prod``, ``amax``/``amin``, ``max``/``min``, ``argmax``/``argmin``,
``all``/``any``, ``count_nonzero`` and ``logsumexp``, with their ``out=`` forms.

Each overload has one kernel for the CPU and the meta device: it checks the arguments and plans the
result (``ember.core.reduction``), then, given data, computes it with NumPy. Dtype rules are
PyTorch's: sums and products of integers and bools are int64, ``dtype=`` casts the input first,
``mean`` needs a floating or complex dtype, ``all``/``any`` keep uint8 and give bool otherwise.
Extrema propagate NaN and their indices are the first occurrence (NumPy's ``argmax`` agrees).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core import return_types
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.dispatch import ops as _ops
from ember.core.families.binary import maximum, minimum
from ember.core.layout import numel
from ember.core.pointwise import type_name, unsupported
from ember.core.promotion import can_cast, get_default_dtype
from ember.core.tensor import Tensor

TAGS = ("reduction", "core")
OUT_TAGS = ("reduction", "out")


def _both(op):
    """Register one function as the op's CPU and meta kernel."""

    def register(fn):
        op.register_kernel("cpu")(fn)
        op.register_meta(fn)
        return fn

    return register


# -- sum, prod, mean ------------------------------------------------------------------------------


def _sum_dtype(self: Tensor, dtype) -> D.dtype:
    dtype = R.check_dtype_arg(dtype)
    if dtype is not None:
        return dtype
    return D.int64 if self.dtype.category <= D.INTEGRAL else self.dtype


def _fold(ufunc):
    def kernel(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
        p = R.plan(self, dim, keepdim)
        result = _sum_dtype(self, dtype)
        return R.finish(
            self,
            p.shape,
            result,
            lambda: ufunc.reduce(R.values(self, result), axis=p.axes, dtype=R.accumulator(result)),
        )

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


@_both(sum_)
def _sum_all(self: Tensor, *, dtype=None) -> Tensor:
    return _sum(self, None, False, dtype=dtype)


_both(sum_dim)(_sum)


@_both(prod_)
def _prod_all(self: Tensor, *, dtype=None) -> Tensor:
    return _prod(self, None, False, dtype=dtype)


@_both(prod_dim)
def _prod_dim(self: Tensor, dim: int, keepdim: bool = False, *, dtype=None) -> Tensor:
    return _prod(self, dim, keepdim, dtype=dtype)


def _with_out_dtype(kernel):
    """``out=`` for sum-like ops: without ``dtype`` the result takes the out tensor's dtype."""

    def out_kernel(self: Tensor, dim, keepdim: bool = False, *, dtype=None, out) -> Tensor:
        if dtype is None and isinstance(out, Tensor):
            dtype = out.dtype
        R.check_out_dtype(out, R.check_dtype_arg(dtype))
        return R.write_out(out, kernel(self, dim, keepdim, dtype=dtype))

    return out_kernel


_both(sum_out)(_with_out_dtype(_sum))
_both(prod_out)(_with_out_dtype(_prod_dim))
_both(sum_all_out)(lambda self, *, dtype=None, out: _with_out_dtype(_sum)(self, None, False, dtype=dtype, out=out))
_both(prod_all_out)(lambda self, *, dtype=None, out: _with_out_dtype(_prod)(self, None, False, dtype=dtype, out=out))


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


@_both(mean_dim)
def _mean(self: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    p = R.plan(self, dim, keepdim)
    result = _mean_dtype(self, dtype)

    def compute():
        total = np.add.reduce(R.values(self, result), axis=p.axes, dtype=R.accumulator(result))
        return total / p.count

    return R.finish(self, p.shape, result, compute)


@_both(mean_)
def _mean_all(self: Tensor, *, dtype=None) -> Tensor:
    return _mean(self, None, False, dtype=dtype)


@_both(mean_out)
def _mean_out(self: Tensor, dim, keepdim: bool = False, *, dtype=None, out) -> Tensor:
    _mean_dtype(self, dtype)
    if dtype is None and isinstance(out, Tensor):
        if out.dtype.category < D.FLOATING:
            raise RuntimeError(
                f"result type {type_name(self.dtype)} can't be cast to the desired output type {type_name(out.dtype)}"
            )
        dtype = out.dtype
    R.check_out_dtype(out, dtype)
    return R.write_out(out, _mean(self, dim, keepdim, dtype=dtype))


@_both(mean_dtype_out)
def _mean_all_out(self: Tensor, *, dtype=None, out) -> Tensor:
    return _mean_out(self, None, False, dtype=dtype, out=out)


# -- extrema ----------------------------------------------------------------------------------------


def _extreme(name: str, ufunc, kernel_name: str):
    def kernel(self: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        p = R.plan(self, dim, keepdim)
        R.check_nonempty(self, p, name, dim)
        if self.dtype.category == D.COMPLEX and numel(p.shape):  # an empty result runs no kernel
            raise unsupported(kernel_name, self.dtype)
        return R.finish(self, p.shape, self.dtype, lambda: ufunc.reduce(R.values(self), axis=p.axes))

    return kernel


_amax = _extreme("amax", np.maximum, "max_values")
_amin = _extreme("amin", np.minimum, "min_values")


def _same_dtype_out(kernel):
    def out_kernel(self: Tensor, dim=(), keepdim: bool = False, *, out) -> Tensor:
        if isinstance(out, Tensor) and out.dtype is not self.dtype:
            raise RuntimeError(
                f"Expected the dtype for input and out to match, but got {type_name(self.dtype)} for input's dtype "
                f"and {type_name(out.dtype)} for out's dtype."
            )
        return R.write_out(out, kernel(self, dim, keepdim))

    return out_kernel


for _name, _kernel in (("amax", _amax), ("amin", _amin)):
    _both(define(f"{_name}(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", TAGS))(_kernel)
    _both(
        define(
            f"{_name}.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS
        )
    )(_same_dtype_out(_kernel))


def _arg_extreme(name: str, ufunc):
    def kernel(self: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        if self.dtype.category == D.COMPLEX:
            raise RuntimeError(f"{name}(): does not support complex input")
        if self.dtype is D.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        if dim is None:
            p = R.plan(self, None, keepdim)
            R.check_nonempty(self, p, name, all_error=IndexError)
            return R.finish(self, p.shape, D.int64, lambda: ufunc(R.values(self).reshape(-1)))
        p = R.plan(self, R._as_int(dim, "dim"), keepdim)
        R.check_nonempty(self, p, name, dim)
        return R.finish(self, p.shape, D.int64, lambda: _along(ufunc, R.values(self), p.axes))

    return kernel


def _along(ufunc, array: np.ndarray, axes: tuple) -> np.ndarray:
    return ufunc(array, axis=axes[0]) if axes else np.zeros(array.shape, np.int64)


_argmax = _arg_extreme("argmax", np.argmax)
_argmin = _arg_extreme("argmin", np.argmin)


def _long_out(kernel):
    def out_kernel(self: Tensor, dim=None, keepdim: bool = False, *, out) -> Tensor:
        R.check_out_dtype(out, D.int64)
        return R.write_out(out, kernel(self, dim, keepdim))

    return out_kernel


for _name, _kernel in (("argmax", _argmax), ("argmin", _argmin)):
    _both(define(f"{_name}(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", TAGS))(_kernel)
    _both(
        define(
            f"{_name}.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS
        )
    )(_long_out(_kernel))


def _max_min(name: str, ufunc, argfunc, binary, index_name: str):
    """``max``/``min``: of everything (0-dim), along a dim (values, indices) and of two tensors."""
    every = define(f"{name}(Tensor self) -> Tensor", TAGS)
    along = define(f"{name}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", TAGS)
    along_out = define(
        f"{name}.dim_{name}(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) {name}, Tensor(b!) {index_name}) "
        "-> (Tensor(a!) values, Tensor(b!) indices)",
        OUT_TAGS,
    )
    every_out = define(f"{name}.unary_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS)
    other = define(f"{name}.other(Tensor self, Tensor other) -> Tensor", ("pointwise",))
    other_out = define(f"{name}.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", ("pointwise", "out"))
    named = getattr(return_types, name)

    @_both(every)
    def _every(self: Tensor) -> Tensor:
        p = R.plan(self, None, False)
        R.check_nonempty(self, p, name)
        if self.dtype.category == D.COMPLEX:
            raise NotImplementedError(f"\"{name}_all\" not implemented for '{type_name(self.dtype)}'")
        return R.finish(self, (), self.dtype, lambda: ufunc.reduce(R.values(self).reshape(-1)))

    @_both(along)
    def _along_dim(self: Tensor, dim: int, keepdim: bool = False):
        p = R.plan(self, R._as_int(dim, "dim"), keepdim)
        R.check_nonempty(self, p, name, dim)
        if self.dtype.category == D.COMPLEX:
            raise RuntimeError(f"{name}(): does not support complex input")
        if self._array is None:
            return named(R.finish(self, p.shape, self.dtype, None), R.finish(self, p.shape, D.int64, None))
        array = R.values(self)
        indices = _along(argfunc, array, p.axes)
        if p.axes:
            picked = np.take_along_axis(array, np.expand_dims(indices, p.axes[0]), axis=p.axes[0])
        else:
            picked = array
        return named(
            R.finish(self, p.shape, self.dtype, lambda: picked), R.finish(self, p.shape, D.int64, lambda: indices)
        )

    def _along_out(self: Tensor, dim: int, keepdim: bool = False, **outs):
        values, indices = outs[name], outs[index_name]
        R.check_out_dtype(values, self.dtype)
        R.check_out_dtype(indices, D.int64)
        result = _along_dim(self, dim, keepdim)
        R.write_out(values, result[0])
        R.write_out(indices, result[1])
        return getattr(return_types, f"{name}_out")(values, indices)

    _both(along_out)(_along_out)

    @_both(every_out)
    def _every_out(self: Tensor, *, out) -> Tensor:
        if isinstance(out, Tensor) and not can_cast(self.dtype, out.dtype):
            raise RuntimeError(
                f"result type {type_name(self.dtype)} can't be cast to the desired output type {type_name(out.dtype)}"
            )
        return R.write_out(out, _every(self))

    other.register_decomposition(lambda self, other: binary.functional(self, other))
    other_out.register_decomposition(lambda self, other, *, out: binary.out(self, other, out=out))
    return every, along, along_out, every_out, other, other_out


max_ops = _max_min("max", np.maximum, np.argmax, maximum, "max_values")
min_ops = _max_min("min", np.minimum, np.argmin, minimum, "min_indices")


# -- all, any, count_nonzero ---------------------------------------------------------------------


def _logical(name: str, ufunc):
    def kernel(self: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        # An empty list of dims reduces nothing here (unlike sum), as in PyTorch.
        p = R.plan(self, dim, keepdim, empty_means_all=False)
        result = D.uint8 if self.dtype is D.uint8 else D.bool_
        return R.finish(self, p.shape, result, lambda: ufunc.reduce(self._array != 0, axis=p.axes))

    def out_kernel(self: Tensor, dim=None, keepdim: bool = False, *, out) -> Tensor:
        if isinstance(out, Tensor) and out.dtype not in (D.bool_, D.uint8):
            raise RuntimeError(f"{name} only supports bool tensor for result, got: {type_name(out.dtype)}")
        return R.write_out(out, kernel(self, dim, keepdim))

    _both(define(f"{name}(Tensor self) -> Tensor", TAGS))(lambda self: kernel(self))
    _both(define(f"{name}.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", TAGS))(kernel)
    _both(define(f"{name}.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", TAGS))(kernel)
    _both(define(f"{name}.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS))(
        out_kernel
    )
    _both(
        define(
            f"{name}.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
            OUT_TAGS,
        )
    )(out_kernel)
    _both(define(f"{name}.all_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS))(
        lambda self, *, out: out_kernel(self, out=out)
    )


_logical("all", np.logical_and)
_logical("any", np.logical_or)


def _count_nonzero(self: Tensor, dim=None) -> Tensor:
    p = R.plan(self, dim, False)
    return R.finish(self, p.shape, D.int64, lambda: np.count_nonzero(self._array, axis=p.axes))


_both(define("count_nonzero(Tensor self, int? dim=None) -> Tensor", TAGS))(_count_nonzero)
_both(define("count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor", TAGS))(_count_nonzero)


# -- logsumexp ----------------------------------------------------------------------------------------

logsumexp_op = define("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", TAGS)
logsumexp_out = define(
    "logsumexp.out(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS
)


@_both(logsumexp_op)
def _logsumexp(self: Tensor, dim, keepdim: bool = False) -> Tensor:
    result = self.dtype if self.dtype.category >= D.FLOATING else get_default_dtype()
    if R.as_dims(dim) == () and self.ndim > 0:
        # PyTorch reduces everything but then cannot add the kept maxima back: an error there too.
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {[1] * self.ndim}")
    p = R.plan(self, dim, keepdim)

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

    return R.finish(self, p.shape, result, compute)


@_both(logsumexp_out)
def _logsumexp_out(self: Tensor, dim, keepdim: bool = False, *, out) -> Tensor:
    if isinstance(out, Tensor) and out.dtype.category < D.FLOATING:
        raise RuntimeError(
            f"logsumexp(): Expected floating point type for result tensor, but got: {type_name(out.dtype)}"
        )
    return R.write_out(out, _logsumexp(self, dim, keepdim))


# -- the Python surface -----------------------------------------------------------------------------

_aten = _ops.aten


def _keepdim(keepdim, position: int = 3) -> bool:
    if not isinstance(keepdim, bool):
        raise TypeError(f"argument 'keepdim' (position {position}) must be bool, not {type(keepdim).__name__}")
    return keepdim


def _check_dim_arg(dim, name: str) -> None:
    R.as_dims(dim, "dim")  # raises TypeError for what PyTorch's parser refuses


def _sum_like(name: str, functional, reduced, out_op, all_out):
    def fn(input, dim=None, keepdim=False, *, dtype=None, out=None):
        if dim is None and not keepdim:
            return functional(input, dtype=dtype) if out is None else all_out(input, dtype=dtype, out=out)
        _check_dim_arg(dim, name)
        if out is not None:
            return out_op(input, dim, _keepdim(keepdim), dtype=dtype, out=out)
        return reduced(input, dim, _keepdim(keepdim), dtype=dtype)

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, dim=None, keepdim=False, *, dtype=None: fn(self, dim, keepdim, dtype=dtype))


_sum_like("sum", _aten.sum.default, _aten.sum.dim_IntList, _aten.sum.IntList_out, _aten.sum.out)


@public("mean")
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    if dim is None and not keepdim:
        return (
            _aten.mean.default(input, dtype=dtype) if out is None else _aten.mean.dtype_out(input, dtype=dtype, out=out)
        )
    _check_dim_arg(dim, "mean")
    if out is not None:
        return _aten.mean.out(input, dim, _keepdim(keepdim), dtype=dtype, out=out)
    return _aten.mean.dim(input, dim, _keepdim(keepdim), dtype=dtype)


@method("mean")
def _mean_method(self, dim=None, keepdim=False, *, dtype=None):
    return mean(self, dim, keepdim, dtype=dtype)


def _int_dim(dim, name: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return int(dim)


_NO_DIM = object()


@public("prod")
def prod(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    if dim is _NO_DIM:
        return _aten.prod.default(input, dtype=dtype) if out is None else _aten.prod.out(input, dtype=dtype, out=out)
    dim = _int_dim(dim, "prod")
    if out is not None:
        return _aten.prod.int_out(input, dim, _keepdim(keepdim), dtype=dtype, out=out)
    return _aten.prod.dim_int(input, dim, _keepdim(keepdim), dtype=dtype)


@method("prod")
def _prod_method(self, dim=_NO_DIM, keepdim=False, *, dtype=None):
    return prod(self, dim, keepdim, dtype=dtype)


def _amax_like(name: str):
    packet = getattr(_aten, name)

    def fn(input, dim=(), keepdim=False, *, out=None):
        dim = () if dim is None else dim
        _check_dim_arg(dim, name)
        if out is not None:
            return packet.out(input, dim, _keepdim(keepdim), out=out)
        return packet.default(input, dim, _keepdim(keepdim))

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, dim=(), keepdim=False: fn(self, dim, keepdim))


_amax_like("amax")
_amax_like("amin")


def _argmax_like(name: str):
    packet = getattr(_aten, name)

    def fn(input, dim=None, keepdim=False, *, out=None):
        if dim is not None:
            dim = _int_dim(dim, name)
        if out is not None:
            return packet.out(input, dim, _keepdim(keepdim), out=out)
        return packet.default(input, dim, _keepdim(keepdim))

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, dim=None, keepdim=False: fn(self, dim, keepdim))


_argmax_like("argmax")
_argmax_like("argmin")


def _max_like(name: str, index_name: str):
    packet = getattr(_aten, name)

    def fn(input, *args, out=None, **kwargs):
        if len(args) > 2:
            raise TypeError(f"{name}() takes at most 3 positional arguments")
        if "other" in kwargs or (args and isinstance(args[0], Tensor)):
            other = kwargs.pop("other") if "other" in kwargs else args[0]
            if kwargs or len(args) > 1:
                raise TypeError(f"{name}(): unexpected arguments with 'other'")
            return packet.other(input, other) if out is None else packet.out(input, other, out=out)
        dim = kwargs.pop("dim", args[0] if args else _NO_DIM)
        keepdim = kwargs.pop("keepdim", args[1] if len(args) > 1 else False)
        if kwargs:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
        if dim is _NO_DIM:
            return packet.default(input) if out is None else packet.unary_out(input, out=out)
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
            raise TypeError(
                f"{name}() received an invalid combination of arguments: expected (Tensor input), "
                f"(Tensor input, Tensor other) or (Tensor input, int dim, bool keepdim), got a {type(dim).__name__}"
            )
        if out is None:
            return packet.dim(input, int(dim), _keepdim(keepdim))
        if not isinstance(out, list | tuple) or len(out) != 2:
            raise TypeError(f"{name}(): out must be a tuple of 2 tensors (values, indices)")
        return getattr(packet, f"dim_{name}")(input, int(dim), _keepdim(keepdim), **{name: out[0], index_name: out[1]})

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, *args, **kwargs: fn(self, *args, **kwargs))


_max_like("max", "max_values")
_max_like("min", "min_indices")


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
            _check_dim_arg(dim, name)
            overload = packet.dims if out is None else packet.dims_out
        if out is None:
            return overload(input, dim, _keepdim(keepdim))
        return overload(input, dim, _keepdim(keepdim), out=out)

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, dim=_NO_DIM, keepdim=False: fn(self, dim, keepdim))


_logical_surface("all")
_logical_surface("any")


@public("count_nonzero")
def count_nonzero(input, dim=None):
    if dim is None or (isinstance(dim, int | np.integer) and not isinstance(dim, bool)):
        return _aten.count_nonzero.default(input, None if dim is None else int(dim))
    _check_dim_arg(dim, "count_nonzero")
    return _aten.count_nonzero.dim_IntList(input, list(dim))


@method("count_nonzero")
def _count_nonzero_method(self, dim=None):
    return count_nonzero(self, dim)


@public("logsumexp")
def logsumexp(input, dim, keepdim=False, *, out=None):
    _check_dim_arg(dim, "logsumexp")
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    if out is not None:
        return _aten.logsumexp.out(input, dim, _keepdim(keepdim), out=out)
    return _aten.logsumexp.default(input, dim, _keepdim(keepdim))


@method("logsumexp")
def _logsumexp_method(self, dim, keepdim=False):
    return logsumexp(self, dim, keepdim)


# Importing it here offers ``ember.return_types`` (PyTorch's ``torch.return_types``) with the core.
import ember.return_types  # noqa: E402, F401
