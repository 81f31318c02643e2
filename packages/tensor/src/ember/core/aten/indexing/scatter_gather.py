"""``gather`` and the scatters (``scatter`` with a src or a value and the legacy ``reduce=``,
``scatter_add``, ``scatter_reduce``), and ``take_along_dim`` on top of gather.

``index`` has the dimensions of ``self``; element ``i`` of it names a position along ``dim`` and
keeps its own position in the other dimensions. The scatters turn that into positions in a flat
C-contiguous copy (``self``'s own array when it is one) and apply NumPy's unbuffered ``ufunc.at``
(one-dimensional, its fast path) for the reductions, plain assignment for a scatter without one
(repeated positions: the last write wins, where PyTorch leaves the winner undefined). Half types
reduce in float32 and round once. Positions are never negative here, as in PyTorch, and are checked even where PyTorch 2.13 skips the
check (``take_along_dim`` reads past the end of a broadcast input).
"""

from __future__ import annotations

import warnings

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.indexing.index_forms import check_index_dtype, compute_dtype, define_writing, fit_out, write_out
from ember.core.aten.shape.copying import checked_scalar
from ember.core.dispatch import define
from ember.core.layout import broadcast_shapes, contiguous_strides, normalize_dim
from ember.core.tensor import Tensor, empty, from_array

LONG_OR_INT = (D.int64, D.int32)

# -- checks -------------------------------------------------------------------------------------------


def _dims(t: Tensor) -> int:
    return max(t.ndim, 1)


def _size(t: Tensor, d: int) -> int:
    return t._shape[d] if t.ndim else 1


def _check_gather(self: Tensor, dim: int, index: Tensor) -> int:
    check_index_dtype(index, "gather(): Expected dtype int32/int64 for index", LONG_OR_INT)
    dim = normalize_dim(dim, self.ndim)
    if _dims(index) != _dims(self):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if index.numel():
        for d in range(_dims(self)):
            if d != dim and _size(index, d) > _size(self, d):
                raise RuntimeError(
                    f"Size does not match at dimension {d} expected index {list(index._shape)} to be no larger than "
                    f"self {list(self._shape)} apart from dimension {dim}"
                )
    return dim


def _check_scatter(name: str, self: Tensor, dim: int, index: Tensor, src) -> int:
    check_index_dtype(index, name + "(): Expected dtype int32/int64 for index", LONG_OR_INT)
    dim = normalize_dim(dim, self.ndim)
    if isinstance(src, Tensor) and src.dtype is not self.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    if _dims(index) != _dims(self):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and _dims(index) != _dims(src):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if index.numel():
        bad_self = any(d != dim and _size(index, d) > _size(self, d) for d in range(_dims(self)))
        if isinstance(src, Tensor):
            if bad_self or any(_size(index, d) > _size(src, d) for d in range(_dims(self))):
                raise RuntimeError(
                    f"Expected index {list(index._shape)} to be no larger than self {list(self._shape)} apart from "
                    f"dimension {dim} and to be no larger size than src {list(src._shape)}"
                )
        elif bad_self:
            raise RuntimeError(
                f"Expected index {list(index._shape)} to be no larger than self {list(self._shape)} apart from "
                f"dimension {dim}"
            )
    return dim


def _bounds(positions: np.ndarray, size: int, dim: int) -> None:
    if positions.size and (positions.min() < 0 or positions.max() >= size):
        bad = int(positions[(positions < 0) | (positions >= size)].flat[0])
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _as_nd(array: np.ndarray) -> np.ndarray:
    return array.reshape(1) if array.ndim == 0 else array


def _leading(array: np.ndarray, shape: tuple, skip: int | None = None) -> np.ndarray:
    """``array[:shape[0], :shape[1], ...]`` (every dimension but ``skip``)."""
    return array[tuple(slice(None) if d == skip else slice(0, n) for d, n in enumerate(shape))]


def _linear(positions: np.ndarray, dim: int, strides: tuple) -> np.ndarray:
    """Where each element of ``index`` points in a C-contiguous tensor with ``strides``: its position
    along ``dim`` and its own position along the other dimensions."""
    linear = positions * strides[dim] if strides[dim] != 1 else positions.astype(np.int64)
    for d in range(positions.ndim):
        if d != dim and positions.shape[d] > 1:
            shape = [1] * positions.ndim
            shape[d] = positions.shape[d]
            linear = linear + np.arange(0, positions.shape[d] * strides[d], strides[d]).reshape(shape)
    return linear


# -- gather -------------------------------------------------------------------------------------------

gather = define("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", ("core",))
gather_out = define(
    "gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out) -> Tensor(a!)",
    ("out", "core"),
)


@gather.register_kernel("cpu")
def _gather(self: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    dim = _check_gather(self, dim, index)
    positions = _as_nd(index._require_data("index with it"))
    _bounds(positions, _size(self, dim), dim)
    data = _as_nd(self._array)
    if not data.flags.c_contiguous:
        data = np.ascontiguousarray(data)
    linear = _linear(positions, dim, contiguous_strides(data.shape))
    return from_array(np.take(data.reshape(-1), linear).reshape(index._shape), self.dtype)


@gather.register_meta
def _gather_meta(self: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    _check_gather(self, dim, index)
    return empty(index._shape, self.dtype, self.device)


@gather_out.register_kernel("cpu")
def _gather_out_kernel(self, dim, index, *, sparse_grad=False, out):
    return write_out(out, gather(self, dim, index, sparse_grad=sparse_grad))


@gather_out.register_meta
def _gather_out_meta(self, dim, index, *, sparse_grad=False, out):
    return fit_out(out, _gather_meta(self, dim, index, sparse_grad=sparse_grad))


# -- the scatters ---------------------------------------------------------------------------------------

_AT = {
    "add": np.add,
    "sum": np.add,
    "multiply": np.multiply,
    "prod": np.multiply,
    "amax": np.maximum,
    "amin": np.minimum,
}


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype == np.bool_:
        return reduce == "amin"
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


def _scatter_into(self: Tensor, dim: int, index: Tensor, src, reduce: str | None, include_self: bool = True) -> None:
    """Scatter ``src`` (a tensor or a number) into ``self`` by ``index`` along ``dim``, reducing by ``reduce``."""
    dim = normalize_dim(dim, self.ndim)
    positions = _as_nd(index._array)
    if positions.size == 0:
        return
    _bounds(positions, _size(self, dim), dim)
    data = _as_nd(self._array)
    compute = compute_dtype(self.dtype)
    work = data if data.flags.c_contiguous and data.dtype == compute else np.ascontiguousarray(data, compute)
    linear = _linear(positions, dim, contiguous_strides(work.shape)).reshape(-1)
    if isinstance(src, Tensor):
        values = _leading(_as_nd(src._array), positions.shape).reshape(-1).astype(compute, copy=False)
    else:
        values = np.full(linear.shape, checked_scalar(src, self.dtype), compute)
    flat = work.reshape(-1)
    if reduce is None:
        flat[linear] = values
    else:
        if not include_self:
            flat[linear] = _identity(reduce, flat.dtype)
        if reduce == "mean":
            np.add.at(flat, linear, values)
            count = np.bincount(linear, minlength=flat.size)
            count = count + 1 if include_self else np.maximum(count, 1)
            if np.issubdtype(flat.dtype, np.integer):
                flat[...] = np.floor_divide(flat, count).astype(flat.dtype)
            else:
                flat[...] = (flat / count).astype(flat.dtype)
        else:
            _AT[reduce].at(flat, linear, values)
    if work is not data:
        np.copyto(data, work, casting="unsafe")


def _src_check(name: str, with_reduce: bool):
    def check(self, dim, index, src, *, reduce=None):
        _check_scatter(name, self, dim, index, src)
        if with_reduce:
            _check_legacy_reduce(reduce)

    return check


def _check_legacy_reduce(reduce) -> None:
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")


def _write_scatter(self, dim, index, src, *, reduce=None):
    _scatter_into(self, dim, index, src, reduce)


def _check_scatter_nored(self, dim, index, src):
    _check_scatter("scatter", self, dim, index, src)


def _write_scatter_nored(self, dim, index, src):
    _scatter_into(self, dim, index, src, None)


scatter_src = define_writing(
    "scatter",
    "src",
    "Tensor self, int dim, Tensor index, Tensor src",
    _write_scatter_nored,
    _check_scatter_nored,
    "src_out",
)
scatter_value = define_writing(
    "scatter",
    "value",
    "Tensor self, int dim, Tensor index, Scalar value",
    _write_scatter_nored,
    _check_scatter_nored,
    "value_out",
)
scatter_reduce_legacy = define_writing(
    "scatter",
    "reduce",
    "Tensor self, int dim, Tensor index, Tensor src, *, str reduce",
    _write_scatter,
    _src_check("scatter", True),
    "reduce_out",
)
scatter_value_reduce = define_writing(
    "scatter",
    "value_reduce",
    "Tensor self, int dim, Tensor index, Scalar value, *, str reduce",
    _write_scatter,
    _src_check("scatter", True),
    "value_reduce_out",
)


def _check_scatter_add(self, dim, index, src):
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
    _check_scatter("scatter_add", self, dim, index, src)


scatter_add = define_writing(
    "scatter_add",
    "",
    "Tensor self, int dim, Tensor index, Tensor src",
    lambda self, dim, index, src: _scatter_into(self, dim, index, src, "add"),
    _check_scatter_add,
    "out",
)

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _check_scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    _check_scatter("scatter_reduce", self, dim, index, src)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if (reduce == "mean" and self.dtype is D.bool_) or (
        reduce in ("amax", "amin") and self.dtype.category == D.COMPLEX
    ):
        raise NotImplementedError(
            f"\"scatter_gather_tensor_cpu_reduce_{reduce}\" not implemented for '{D.SCALAR_TYPE_NAMES[self.dtype]}'"
        )


scatter_reduce = define_writing(
    "scatter_reduce",
    "two",
    "Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True",
    lambda self, dim, index, src, reduce, *, include_self=True: _scatter_into(
        self, dim, index, src, reduce, include_self
    ),
    _check_scatter_reduce,
    "two_out",
)


# -- take_along_dim ------------------------------------------------------------------------------------

take_along_dim = define("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor")  # a gather
take_along_dim_out = define(
    "take_along_dim.out(Tensor self, Tensor indices, int? dim=None, *, Tensor(a!) out) -> Tensor(a!)", ("out",)
)


@take_along_dim.register_decomposition
def _take_along_dim(self: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    check_index_dtype(indices, "torch.take_along_dim(): dtype of indices should be Long but got {dtype}")
    if dim is None:
        return gather(self.reshape(-1), 0, indices.reshape(-1))
    dim = normalize_dim(dim, self.ndim)
    if self.ndim != indices.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{self.ndim} dimensions for input, and {indices.ndim} dimensions for indices"
        )
    sizes = list(self._shape)
    sizes[dim] = indices._shape[dim]
    shape = list(broadcast_shapes(tuple(sizes), indices._shape))
    indices = indices.expand(*shape)
    shape[dim] = self._shape[dim]
    return gather(self.expand(*shape), dim, indices)


@take_along_dim_out.register_decomposition
def _take_along_dim_out(self: Tensor, indices: Tensor, dim: int | None = None, *, out: Tensor) -> Tensor:
    return write_out(out, take_along_dim(self, indices, dim))


# -- the Python surface ---------------------------------------------------------------------------------


def _out_call(op, out_op, *args, out=None, **kwargs):
    return op(*args, **kwargs) if out is None else out_op(*args, out=out, **kwargs)


@public("gather")
def gather_function(input, dim, index, *, sparse_grad: bool = False, out=None) -> Tensor:
    return _out_call(gather, gather_out, input, dim, index, sparse_grad=sparse_grad, out=out)


@method("gather")
def _gather_method(self, dim, index, *, sparse_grad: bool = False) -> Tensor:
    return gather(self, dim, index, sparse_grad=sparse_grad)


def _scatter_ops(src, value, reduce):
    if src is not None and value is not None:
        raise TypeError("scatter() got both 'src' and 'value'")
    if src is None and value is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    if src is None:
        src = value
    if isinstance(src, Tensor):
        if reduce is not None:
            warnings.warn(
                "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a future "
                "PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                UserWarning,
                stacklevel=3,
            )
        return (scatter_src if reduce is None else scatter_reduce_legacy), src
    return (scatter_value if reduce is None else scatter_value_reduce), src


def _reduce_kwargs(reduce) -> dict:
    return {} if reduce is None else {"reduce": reduce}


@public("scatter")
def scatter_function(input, dim, index, src=None, *, value=None, reduce=None, out=None) -> Tensor:
    (functional, _, out_op), src = _scatter_ops(src, value, reduce)
    return _out_call(functional, out_op, input, dim, index, src, out=out, **_reduce_kwargs(reduce))


@method("scatter")
def _scatter_method(self, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
    (functional, _, _), src = _scatter_ops(src, value, reduce)
    return functional(self, dim, index, src, **_reduce_kwargs(reduce))


@method("scatter_")
def _scatter_inplace(self, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
    (_, inplace, _), src = _scatter_ops(src, value, reduce)
    return inplace(self, dim, index, src, **_reduce_kwargs(reduce))


@public("scatter_add")
def scatter_add_function(input, dim, index, src, *, out=None) -> Tensor:
    return _out_call(scatter_add[0], scatter_add[2], input, dim, index, src, out=out)


@method("scatter_add")
def _scatter_add_method(self, dim, index, src) -> Tensor:
    return scatter_add[0](self, dim, index, src)


@method("scatter_add_")
def _scatter_add_inplace(self, dim, index, src) -> Tensor:
    return scatter_add[1](self, dim, index, src)


@public("scatter_reduce")
def scatter_reduce_function(input, dim, index, src, reduce, *, include_self: bool = True, out=None) -> Tensor:
    return _out_call(
        scatter_reduce[0], scatter_reduce[2], input, dim, index, src, reduce, include_self=include_self, out=out
    )


@method("scatter_reduce")
def _scatter_reduce_method(self, dim, index, src, reduce, *, include_self: bool = True) -> Tensor:
    return scatter_reduce[0](self, dim, index, src, reduce, include_self=include_self)


@method("scatter_reduce_")
def _scatter_reduce_inplace(self, dim, index, src, reduce, *, include_self: bool = True) -> Tensor:
    return scatter_reduce[1](self, dim, index, src, reduce, include_self=include_self)


@public("take_along_dim")
def take_along_dim_function(input, indices, dim=None, *, out=None) -> Tensor:
    return _out_call(take_along_dim, take_along_dim_out, input, indices, dim, out=out)


@method("take_along_dim")
def _take_along_dim_method(self, indices, dim=None) -> Tensor:
    return take_along_dim(self, indices, dim)
