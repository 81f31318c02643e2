"""What reductions share: which dimensions a ``dim`` argument names, the result's shape, the
accumulation dtype, and writing a result into an ``out=`` tensor.

A reduction's result is always laid out contiguously, whatever the input's strides (PyTorch allocates
it with ``empty(shape)``; ``keepdim=True`` only adds size-1 dimensions). An op's meta function and its
CPU kernel both take the shape from ``plan`` and run the same argument checks, which is what makes them
agree: the meta function then returns ``empty(shape, dtype, device)`` (``register`` pairs the two), the
kernel ``computed(shape, dtype, compute)``. ``dim`` follows PyTorch's ``int[1]?``:
an int, a sequence of ints, or None (every dimension); ``()`` also means every dimension, except for
``all``/``any``, where it reduces none. A 0-dim tensor accepts ``dim`` 0 and -1 and stays 0-dim.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

import numpy as np

from ember.core import dtypes as D
from ember.core.devices import CPU
from ember.core.layout import normalize_dims, numel
from ember.core.pointwise import check_no_internal_overlap, resize_out, type_name
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array


@dataclass(frozen=True)
class Plan:
    axes: tuple  # the reduced dimensions, normalized; () for a 0-dim input
    shape: tuple  # the result's shape (keepdim applied)
    count: int  # how many input elements fold into each result element


def as_dims(dim, name: str = "dim"):
    """``dim`` as None or a tuple of ints; TypeError for anything PyTorch's ``int[1]?`` refuses."""
    if dim is None:
        return None
    if type(dim) is int:  # the common case, first
        return (dim,)
    if isinstance(dim, int | np.integer | Tensor) and not isinstance(dim, bool):
        return (as_int(dim, name),)
    if isinstance(dim, list | tuple):
        return tuple(as_int(d, name) for d in dim)
    raise TypeError(f"argument '{name}' must be tuple of ints, not {type(dim).__name__}")


def as_int(value, name: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, int | np.integer | Tensor):
        raise TypeError(f"argument '{name}' must be tuple of ints, but found element of type {type(value).__name__}")
    return operator.index(value)


def dims_arg(dim, name: str) -> None:
    """TypeError for a ``dim`` that PyTorch's argument parser refuses (a float, a bool, ...)."""
    try:
        as_dims(dim)
    except TypeError as error:
        raise TypeError(f"{name}(): {error}") from None


def int_dim_arg(dim, name: str) -> int:
    """A ``dim`` that must be a single int (``prod``, ``argmax``, ``max``)."""
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return int(dim)


def keepdim_arg(keepdim, position: int = 3) -> bool:
    if not isinstance(keepdim, bool):
        raise TypeError(f"argument 'keepdim' (position {position}) must be bool, not {type(keepdim).__name__}")
    return keepdim


def numpy_names(fn):
    """PyTorch's argument parser also takes NumPy's ``axis`` and ``keepdims`` for ``dim`` and ``keepdim``."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if "axis" in kwargs or "keepdims" in kwargs:
            for numpy_name, name in (("axis", "dim"), ("keepdims", "keepdim")):
                if numpy_name in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got both '{name}' and its alias '{numpy_name}'")
                    kwargs[name] = kwargs.pop(numpy_name)
        return fn(*args, **kwargs)

    return call


def accept_numpy_names(names: tuple, functions: bool = True, methods: bool = True) -> None:
    """Wrap the registered ``ember.<name>`` and ``Tensor.<name>`` with ``numpy_names``."""
    from ember.core import api

    for name in names:
        if functions and name in api.functions:
            api.functions[name] = numpy_names(api.functions[name])
        if methods and name in api.methods:
            api.methods[name] = numpy_names(api.methods[name])


def register(op, cpu, meta) -> None:
    """Register an op's CPU kernel and its meta function."""
    op.register_kernel("cpu")(cpu)
    op.register_meta(meta)


def plan(self: Tensor, dim, keepdim: bool, empty_means_all: bool = True) -> Plan:
    ndim = len(self._shape)
    dims = as_dims(dim)
    if dims is None or (not dims and empty_means_all):
        axes = tuple(range(ndim))
    else:
        axes = normalize_dims(dims, ndim)
    if ndim == 0:
        axes = ()
    if keepdim:
        shape = tuple(1 if i in axes else n for i, n in enumerate(self._shape))
    else:
        shape = tuple(n for i, n in enumerate(self._shape) if i not in axes)
    count = numel(tuple(self._shape[i] for i in axes))
    return Plan(axes, shape, count)


# The longest row ``trailing_sum`` folds: BLAS sums a row in a few dozen vector lanes, each a
# plain running sum, so a row this long keeps float32's error near a pairwise sum's.
_TRAILING_ROW = 4096


def trailing_sum(array: np.ndarray, axes: tuple) -> np.ndarray | None:
    """The sum over ``axes`` of a C-contiguous float32/float64 array where they are its last dims,
    as a matrix-vector product by ones (several times faster than NumPy's reduce over many short
    rows, as in a global average pool); None where that does not apply."""
    ndim = array.ndim
    if not axes or sorted(axes) != list(range(ndim - len(axes), ndim)) or not array.flags.c_contiguous:
        return None
    if array.dtype != np.float32 and array.dtype != np.float64:
        return None
    row = 1
    for i in axes:
        row *= array.shape[i]
    if not 1 < row <= _TRAILING_ROW or array.size == 0:
        return None
    return np.matmul(array.reshape(-1, row), np.ones(row, array.dtype)).reshape(array.shape[: ndim - len(axes)])


def check_nonempty(self: Tensor, p: Plan, name: str, dim=None, all_error: type[Exception] = RuntimeError) -> None:
    """max, amax, argmax...: no identity, so an empty reduction is an error, as in PyTorch. Reducing
    everything (``dim`` None or empty) and naming an empty dimension raise differently."""
    if numel(self._shape) == 0 and not as_dims(dim):
        raise all_error(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    for axis in p.axes:
        if self._shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")


def check_dtype_arg(dtype) -> D.dtype | None:
    if dtype is None or isinstance(dtype, D.dtype):
        return dtype
    raise TypeError(f"argument 'dtype' must be ember.dtype, not {type(dtype).__name__}")


def accumulator(d: D.dtype) -> np.dtype:
    """The dtype sums and products run in: float32 for the half types (rounded once at the end),
    float64/complex128 for float32/complex64 (PyTorch's CPU kernels are as accurate), int64 for
    integers (the result's own dtype then wraps as PyTorch's does)."""
    if d is D.float16 or d is D.bfloat16 or d is D.float32 or d is D.float64:
        return np.dtype(np.float32) if d.itemsize == 2 else np.dtype(np.float64)
    if d.category == D.COMPLEX:
        return np.dtype(np.complex128)
    if d is D.bool_:
        return np.dtype(np.bool_)
    return np.dtype(np.int64)


def values(self: Tensor, as_dtype: D.dtype | None = None) -> np.ndarray:
    """The input's data, cast to ``as_dtype`` first where given (complex to real drops the
    imaginary part, as PyTorch's casts do); half types come out as float32."""
    array = self._array
    if as_dtype is not None and as_dtype is not self.dtype:
        if self.dtype.category == D.COMPLEX and as_dtype.category != D.COMPLEX:
            array = array.real
        array = array.astype(as_dtype.np)
    if array.dtype == D.bfloat16.np or array.dtype == np.float16:
        array = array.astype(np.float32)
    return array


def computed(shape: tuple, dtype: D.dtype, compute, stride: tuple | None = None) -> Tensor:
    """A CPU kernel's result: ``compute()`` in ``dtype``, laid out contiguously unless ``stride``
    says otherwise (a contiguous result wraps the computed array, without a copy)."""
    token = silence()  # overflow to inf and 0/0 are PyTorch's silent results too
    try:
        array = np.asarray(compute())
    finally:
        restore(token)
    if dtype.category != D.COMPLEX and np.iscomplexobj(array):
        array = array.real
    array = array.astype(dtype.np, copy=False).reshape(shape)
    if stride is None:
        return from_array(array, dtype)
    out = empty(shape, dtype, CPU, stride)
    np.copyto(out._array, array)
    return out


def fit_out(out, result: Tensor) -> Tensor:
    """Check the ``out=`` tensor against ``result`` (a CPU result or a meta function's) and resize
    it to ``result``'s shape, as PyTorch does; an ``out=`` meta function ends here."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to be on {result.device}, but got a tensor on {out.device}")
    if out._shape != result._shape:
        resize_out(out, result._shape)
    check_no_internal_overlap(out)
    return out


def write_out(out, result: Tensor) -> Tensor:
    """Copy a CPU ``result`` into the ``out=`` tensor, after ``fit_out`` (meta functions stop there)."""
    fit_out(out, result)
    if out.device.type == "meta":  # a meta result has no values to copy: the fitted out is the answer
        return out
    if out._array is None or result._array is None:
        # No host values here (a fake tensor's, a device plugin's): the copy goes through the op.
        return out.copy_(result)
    source = result._array
    if out.dtype.category != D.COMPLEX and result.dtype.category == D.COMPLEX:
        source = source.real
    np.copyto(out._array, source, casting="unsafe")
    out._storage.version += 1
    return out


def check_out_dtype(out, expected: D.dtype) -> None:
    """``out=`` tensors of ops whose result dtype is fixed must have exactly that dtype."""
    if isinstance(out, Tensor) and out.dtype is not expected:
        raise RuntimeError(
            f"Expected out tensor to have dtype {type_name(expected)}, but got {type_name(out.dtype)} instead"
        )
