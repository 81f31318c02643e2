"""Extrema: ``amax``/``amin``, ``max``/``min`` (of everything, along a dim with indices, and of two
tensors), ``argmax``/``argmin`` and ``aminmax``, with their ``out=`` forms.

NaN propagates (it is the maximum and the minimum) and indices are the first occurrence, as in
PyTorch's CPU kernels; NumPy's ``maximum.reduce`` and ``argmax`` agree on both. None of these has an
identity, so an empty reduction raises: RuntimeError when reducing everything, IndexError for an
empty dimension named by ``dim``. ``max(x, dim)`` returns ``ember.return_types.max(values, indices)``.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core import return_types
from ember.core.api import method, public
from ember.core.aten.pointwise.binary import maximum, minimum
from ember.core.dispatch import define
from ember.core.dispatch import ops as _ops
from ember.core.layout import normalize_dim, numel
from ember.core.pointwise import type_name, unsupported
from ember.core.promotion import can_cast
from ember.core.tensor import Tensor, empty

TAGS = ("reduction", "core")
OUT_TAGS = ("reduction", "out")
_NO_DIM = object()


# -- extrema ----------------------------------------------------------------------------------------


def _extreme(name: str, ufunc, kernel_name: str):
    """``amax``/``amin``: the kernel and the meta function."""

    def plan(self: Tensor, dim, keepdim: bool) -> R.Plan:
        # PyTorch checks each named dim for emptiness before it looks for repeated dims.
        for d in R.as_dims(dim) or ():
            if self._shape and self._shape[normalize_dim(d, self.ndim)] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        p = R.plan(self, dim, keepdim)
        R.check_nonempty(self, p, name, dim)
        if self.dtype.category == D.COMPLEX and numel(p.shape):  # an empty result runs no kernel
            raise unsupported(kernel_name, self.dtype)
        return p

    def kernel(self: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        p = plan(self, dim, keepdim)
        return R.computed(p.shape, self.dtype, lambda: ufunc.reduce(R.values(self), axis=p.axes))

    def meta(self: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        return empty(plan(self, dim, keepdim).shape, self.dtype, self.device)

    return kernel, meta


def _same_dtype_out(kernel, write):
    def out_kernel(self: Tensor, dim=(), keepdim: bool = False, *, out) -> Tensor:
        if isinstance(out, Tensor) and out.dtype is not self.dtype:
            raise RuntimeError(
                f"Expected the dtype for input and out to match, but got {type_name(self.dtype)} for input's dtype "
                f"and {type_name(out.dtype)} for out's dtype."
            )
        return write(out, kernel(self, dim, keepdim))

    return out_kernel


for _name, _ufunc, _kernel_name in (("amax", np.maximum, "max_values"), ("amin", np.minimum, "min_values")):
    _kernel, _meta = _extreme(_name, _ufunc, _kernel_name)
    R.register(define(f"{_name}(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", TAGS), _kernel, _meta)
    R.register(
        define(
            f"{_name}.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS
        ),
        _same_dtype_out(_kernel, R.write_out),
        _same_dtype_out(_meta, R.fit_out),
    )


def _arg_extreme(name: str, ufunc):
    """``argmax``/``argmin``: the kernel and the meta function."""

    def plan(self: Tensor, dim, keepdim: bool) -> R.Plan:
        if self.dtype.category == D.COMPLEX:
            raise RuntimeError(f"{name}(): does not support complex input")
        if self.dtype is D.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        if dim is None:
            p = R.plan(self, None, keepdim)
            R.check_nonempty(self, p, name, all_error=IndexError)
            return p
        p = R.plan(self, R.as_int(dim, "dim"), keepdim)
        R.check_nonempty(self, p, name, dim)
        return p

    def kernel(self: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        p = plan(self, dim, keepdim)
        if dim is None:
            return R.computed(p.shape, D.int64, lambda: ufunc(R.values(self).reshape(-1)))
        return R.computed(p.shape, D.int64, lambda: _along(ufunc, R.values(self), p.axes))

    def meta(self: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        return empty(plan(self, dim, keepdim).shape, D.int64, self.device)

    return kernel, meta


def _along(ufunc, array: np.ndarray, axes: tuple) -> np.ndarray:
    return ufunc(array, axis=axes[0]) if axes else np.zeros(array.shape, np.int64)


def _long_out(kernel, write):
    def out_kernel(self: Tensor, dim=None, keepdim: bool = False, *, out) -> Tensor:
        R.check_out_dtype(out, D.int64)
        return write(out, kernel(self, dim, keepdim))

    return out_kernel


for _name, _ufunc in (("argmax", np.argmax), ("argmin", np.argmin)):
    _kernel, _meta = _arg_extreme(_name, _ufunc)
    R.register(define(f"{_name}(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", TAGS), _kernel, _meta)
    R.register(
        define(
            f"{_name}.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS
        ),
        _long_out(_kernel, R.write_out),
        _long_out(_meta, R.fit_out),
    )


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

    def every_plan(self: Tensor) -> None:
        p = R.plan(self, None, False)
        R.check_nonempty(self, p, name)
        if self.dtype.category == D.COMPLEX:
            raise NotImplementedError(f"\"{name}_all\" not implemented for '{type_name(self.dtype)}'")

    def every_kernel(self: Tensor) -> Tensor:
        every_plan(self)
        return R.computed((), self.dtype, lambda: ufunc.reduce(R.values(self).reshape(-1)))

    def every_meta(self: Tensor) -> Tensor:
        every_plan(self)
        return empty((), self.dtype, self.device)

    def along_plan(self: Tensor, dim: int, keepdim: bool) -> R.Plan:
        p = R.plan(self, R.as_int(dim, "dim"), keepdim)
        R.check_nonempty(self, p, name, dim)
        if self.dtype.category == D.COMPLEX:
            raise RuntimeError(f"{name}(): does not support complex input")
        return p

    def along_kernel(self: Tensor, dim: int, keepdim: bool = False):
        p = along_plan(self, dim, keepdim)
        array = R.values(self)
        indices = _along(argfunc, array, p.axes)
        if p.axes:
            picked = np.take_along_axis(array, np.expand_dims(indices, p.axes[0]), axis=p.axes[0])
        else:
            picked = array
        return named(R.computed(p.shape, self.dtype, lambda: picked), R.computed(p.shape, D.int64, lambda: indices))

    def along_meta(self: Tensor, dim: int, keepdim: bool = False):
        p = along_plan(self, dim, keepdim)
        return named(empty(p.shape, self.dtype, self.device), empty(p.shape, D.int64, self.device))

    def along_out_form(functional, write):
        def out_kernel(self: Tensor, dim: int, keepdim: bool, values: Tensor, indices: Tensor):
            R.check_out_dtype(values, self.dtype)
            R.check_out_dtype(indices, D.int64)
            result = functional(self, dim, keepdim)
            write(values, result[0])
            write(indices, result[1])
            return getattr(return_types, f"{name}_out")(values, indices)

        # The out tensors are keyword-only and named per op (max/max_values, min/min_indices).
        if name == "max":
            return lambda self, dim, keepdim=False, *, max, max_values: out_kernel(self, dim, keepdim, max, max_values)
        return lambda self, dim, keepdim=False, *, min, min_indices: out_kernel(self, dim, keepdim, min, min_indices)

    def every_out_form(functional, write):
        def out_kernel(self: Tensor, *, out) -> Tensor:
            if isinstance(out, Tensor) and not can_cast(self.dtype, out.dtype):
                raise RuntimeError(
                    f"result type {type_name(self.dtype)} can't be cast to the desired output type "
                    f"{type_name(out.dtype)}"
                )
            return write(out, functional(self))

        return out_kernel

    R.register(every, every_kernel, every_meta)
    R.register(along, along_kernel, along_meta)
    R.register(along_out, along_out_form(along_kernel, R.write_out), along_out_form(along_meta, R.fit_out))
    R.register(every_out, every_out_form(every_kernel, R.write_out), every_out_form(every_meta, R.fit_out))

    other.register_decomposition(lambda self, other: binary.functional(self, other))
    other_out.register_decomposition(lambda self, other, *, out: binary.out(self, other, out=out))
    return every, along, along_out, every_out, other, other_out


max_ops = _max_min("max", np.maximum, np.argmax, maximum, "max_values")
min_ops = _max_min("min", np.minimum, np.argmin, minimum, "min_indices")


# -- aminmax ------------------------------------------------------------------------------------------

aminmax_op = define("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)", TAGS)
aminmax_out = define(
    "aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) max) "
    "-> (Tensor(a!) min, Tensor(b!) max)",
    OUT_TAGS,
)


def _aminmax_plan(self: Tensor, dim, keepdim: bool) -> R.Plan:
    if dim is None:
        p = R.plan(self, None, keepdim)
        if self.numel() == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
            )
    else:
        p = R.plan(self, R.as_int(dim, "dim"), keepdim)
        R.check_nonempty(self, p, "aminmax", dim)
    if self.dtype.category == D.COMPLEX:
        raise unsupported("aminmax", self.dtype)
    return p


def _aminmax(self: Tensor, *, dim=None, keepdim: bool = False):
    p = _aminmax_plan(self, dim, keepdim)
    return return_types.aminmax(
        R.computed(p.shape, self.dtype, lambda: np.minimum.reduce(R.values(self), axis=p.axes)),
        R.computed(p.shape, self.dtype, lambda: np.maximum.reduce(R.values(self), axis=p.axes)),
    )


def _aminmax_meta(self: Tensor, *, dim=None, keepdim: bool = False):
    p = _aminmax_plan(self, dim, keepdim)
    return return_types.aminmax(empty(p.shape, self.dtype, self.device), empty(p.shape, self.dtype, self.device))


def _aminmax_with_out(functional, write):
    def out_kernel(self: Tensor, *, dim=None, keepdim: bool = False, min, max):  # the schema names them so
        R.check_out_dtype(min, self.dtype)
        R.check_out_dtype(max, self.dtype)
        low, high = functional(self, dim=dim, keepdim=keepdim)
        return return_types.aminmax_out(write(min, low), write(max, high))

    return out_kernel


R.register(aminmax_op, _aminmax, _aminmax_meta)
R.register(aminmax_out, _aminmax_with_out(_aminmax, R.write_out), _aminmax_with_out(_aminmax_meta, R.fit_out))


# -- the Python surface -----------------------------------------------------------------------------

_aten = _ops.aten


def _amax_like(name: str):
    packet = getattr(_aten, name)

    def fn(input, dim=(), keepdim=False, *, out=None):
        dim = () if dim is None else dim
        R.dims_arg(dim, name)
        if out is not None:
            return packet.out(input, dim, R.keepdim_arg(keepdim), out=out)
        return packet.default(input, dim, R.keepdim_arg(keepdim))

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, dim=(), keepdim=False: fn(self, dim, keepdim))


_amax_like("amax")
_amax_like("amin")


def _argmax_like(name: str):
    packet = getattr(_aten, name)

    def fn(input, dim=None, keepdim=False, *, out=None):
        if dim is not None:
            dim = R.int_dim_arg(dim, name)
        if out is not None:
            return packet.out(input, dim, R.keepdim_arg(keepdim), out=out)
        return packet.default(input, dim, R.keepdim_arg(keepdim))

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
            return packet.dim(input, int(dim), R.keepdim_arg(keepdim))
        if not isinstance(out, list | tuple) or len(out) != 2:
            raise TypeError(f"{name}(): out must be a tuple of 2 tensors (values, indices)")
        return getattr(packet, f"dim_{name}")(
            input, int(dim), R.keepdim_arg(keepdim), **{name: out[0], index_name: out[1]}
        )

    fn.__name__ = fn.__qualname__ = name
    public(name)(fn)
    method(name)(lambda self, *args, **kwargs: fn(self, *args, **kwargs))


_max_like("max", "max_values")
_max_like("min", "min_indices")


@public("aminmax")
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """``ember.aminmax``: the minimum and maximum together, as ``ember.return_types.aminmax(min, max)``."""
    if dim is not None:
        dim = R.int_dim_arg(dim, "aminmax")
    if out is None:
        return _aten.aminmax.default(input, dim=dim, keepdim=R.keepdim_arg(keepdim))
    if not isinstance(out, list | tuple) or len(out) != 2:
        raise TypeError("aminmax(): out must be a tuple of 2 tensors (min, max)")
    return _aten.aminmax.out(input, dim=dim, keepdim=R.keepdim_arg(keepdim), min=out[0], max=out[1])


@method("aminmax")
def _aminmax_method(self, *, dim=None, keepdim=False):
    return aminmax(self, dim=dim, keepdim=keepdim)


R.accept_numpy_names(("amax", "amin", "argmax", "argmin", "max", "min", "aminmax"))


# Importing it here offers ``ember.return_types`` (PyTorch's ``torch.return_types``) with the core.
import ember.return_types  # noqa: E402, F401
