"""Sorting and selection along a dimension: ``sort``, ``argsort``, ``msort``, ``topk``, ``kthvalue``,
``median``/``nanmedian`` (of everything and along a dim) and ``mode``, with their ``out=`` forms.

Every kernel orders with one stable NumPy sort in which NaN is the largest value, as PyTorch's
comparators have it. A descending stable order is the ascending one of the reversed row, read
backwards: equal values then keep their original order, which is what PyTorch's ``stable=True`` gives.
An unstable sort is allowed any order of ties, so it returns the stable one.

The index of a tie in ``topk``, ``kthvalue`` and ``median`` is whatever PyTorch's selection
algorithm leaves there; ours is the first in stable order. Where PyTorch defines it, we follow it:
``median`` of a row with NaN gives the first NaN; ``mode`` gives the smallest of the most frequent
values and the index of its last occurrence (each NaN counts alone there: PyTorch's answer for rows
with NaN depends on how its sort met the NaNs, and is not reproduced).

``sort``/``argsort`` results keep the input's strides when it is dense (else dense ones in its
order); the reductions (``kthvalue``, ``median``, ``mode``) and ``topk`` return contiguous results.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core import return_types
from ember.core.api import method, public
from ember.core.dispatch import define
from ember.core.layout import dense_strides_like, normalize_dim, numel
from ember.core.pointwise import unsupported
from ember.core.tensor import Tensor, empty, from_array

TAGS = ("core",)
OUT_TAGS = ("out",)


# -- ordering on NumPy ------------------------------------------------------------------------------


def _keys(array: np.ndarray) -> np.ndarray:
    """Values NumPy sorts natively and in PyTorch's order (bfloat16 widened, bool as bytes)."""
    if array.dtype == np.bool_:
        return array.view(np.uint8)
    if array.dtype == D.bfloat16.np:
        return array.astype(np.float32)
    return array


def order(keys: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort along ``axis``; NaN last ascending, first descending; ties in original order."""
    if not descending:
        return np.argsort(keys, axis=axis, kind="stable")
    flipped = np.flip(keys, axis)
    return (keys.shape[axis] - 1) - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis)


def _is_nan(array: np.ndarray) -> np.ndarray | None:
    return np.isnan(array) if array.dtype.kind == "f" else None


def _check_real(self: Tensor, what: str) -> None:
    if self.dtype.category == D.COMPLEX:
        raise RuntimeError(f"{what} does not support complex dtypes on CPU")


def _dim(self: Tensor, dim) -> int:
    return normalize_dim(R.as_int(dim, "dim"), self.ndim)


def _as_2d(keys: np.ndarray, axis: int) -> np.ndarray:
    """The rows along ``axis`` as the last axis of a 2-D array (a copy only where needed)."""
    moved = np.moveaxis(keys, axis, -1)
    return moved.reshape(-1, moved.shape[-1]) if moved.ndim else moved.reshape(1, 1)


# -- sort, argsort, msort -----------------------------------------------------------------------------

sort_op = define("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", TAGS)
sort_stable = define(
    "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
    TAGS,
)
sort_values = define(
    "sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, Tensor(b!) indices) "
    "-> (Tensor(a!) values, Tensor(b!) indices)",
    OUT_TAGS,
)
sort_values_stable = define(
    "sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False, Tensor(a!) values, "
    "Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    OUT_TAGS,
)


def _sort_plan(self: Tensor, dim) -> tuple[int, tuple]:
    """The sorted axis and the results' strides: the input's where it is dense."""
    _check_real(self, "Sort")
    return _dim(self, dim), dense_strides_like(self._shape, self._stride)


def _sort_meta(self: Tensor, dim: int = -1, descending: bool = False):
    _, stride = _sort_plan(self, dim)
    return return_types.sort(
        empty(self._shape, self.dtype, self.device, stride), empty(self._shape, D.int64, self.device, stride)
    )


def _sort(self: Tensor, dim: int = -1, descending: bool = False):
    axis, stride = _sort_plan(self, dim)
    values = empty(self._shape, self.dtype, self.device, stride)
    indices = empty(self._shape, D.int64, self.device, stride)
    if numel(self._shape):
        if self.ndim == 0:
            values._array[...] = self._array
            indices._array[...] = 0
        else:
            idx = order(_keys(self._array), axis, descending)
            values._array[...] = np.take_along_axis(self._array, idx, axis)
            indices._array[...] = idx
    return return_types.sort(values, indices)


def _write_pair(kind: str, result, values, indices, dtype: D.dtype, write=R.write_out):
    """Write a (values, indices) result into the ``out=`` pair; ``write`` is ``R.fit_out`` on meta."""
    R.check_out_dtype(values, dtype)
    R.check_out_dtype(indices, D.int64)
    write(values, result[0])
    write(indices, result[1])
    return getattr(return_types, f"{kind}_out")(values, indices)


def _write_pair_meta(kind: str, result, values, indices, dtype: D.dtype):
    return _write_pair(kind, result, values, indices, dtype, R.fit_out)


def _sort_forms(sort, write_pair) -> dict:
    """The sort kernels on ``sort`` and ``write_pair`` (the CPU's, or the meta device's)."""

    def sort_default(self: Tensor, dim: int = -1, descending: bool = False):
        return sort(self, dim, descending)

    def sort_stable_kernel(self: Tensor, *, stable=None, dim: int = -1, descending: bool = False):
        return sort(self, dim, descending)

    def sort_values_kernel(self: Tensor, dim: int = -1, descending: bool = False, *, values, indices):
        return write_pair("sort", sort(self, dim, descending), values, indices, self.dtype)

    def sort_values_stable_kernel(
        self: Tensor, *, stable=None, dim: int = -1, descending: bool = False, values, indices
    ):
        return write_pair("sort", sort(self, dim, descending), values, indices, self.dtype)

    return {
        sort_op: sort_default,
        sort_stable: sort_stable_kernel,
        sort_values: sort_values_kernel,
        sort_values_stable: sort_values_stable_kernel,
    }


for _op, _cpu in _sort_forms(_sort, _write_pair).items():
    _op.register_kernel("cpu")(_cpu)
for _op, _meta in _sort_forms(_sort_meta, _write_pair_meta).items():
    _op.register_meta(_meta)


argsort_op = define("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor")  # sort's indices
argsort_stable = define("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor")
argsort_out = define(
    "argsort.stable_out(Tensor self, *, bool stable, int dim=-1, bool descending=False, Tensor(a!) out) -> Tensor(a!)",
    OUT_TAGS,
)
argsort_op.register_decomposition(lambda self, dim=-1, descending=False: sort_op(self, dim, descending)[1])
argsort_stable.register_decomposition(
    lambda self, *, stable, dim=-1, descending=False: sort_stable(self, stable=stable, dim=dim, descending=descending)[
        1
    ]
)


@argsort_out.register_decomposition
def _argsort_out(self: Tensor, *, stable, dim: int = -1, descending: bool = False, out):
    R.check_out_dtype(out, D.int64)
    return R.write_out(out, sort_stable(self, stable=stable, dim=dim, descending=descending)[1])


msort_op = define("msort(Tensor self) -> Tensor")  # sort's values
msort_out = define("msort.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS)
msort_op.register_decomposition(lambda self: sort_op(self, 0)[0])


@msort_out.register_decomposition
def _msort_out(self: Tensor, *, out):
    R.check_out_dtype(out, self.dtype)
    return R.write_out(out, sort_op(self, 0)[0])


# -- topk ---------------------------------------------------------------------------------------------

topk_op = define(
    "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
    TAGS,
)
topk_values = define(
    "topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, Tensor(a!) values, "
    "Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    OUT_TAGS,
)


def _topk_plan(self: Tensor, k, dim) -> tuple:
    """The checks; k, the axis, its size and the results' shape."""
    k = R.as_int(k, "k")
    axis = _dim(self, dim)
    n = self._shape[axis] if self.ndim else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    _check_real(self, "topk")
    if self.dtype is D.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    return k, axis, n, tuple(k if i == axis else s for i, s in enumerate(self._shape))


@topk_op.register_meta
def _topk_meta(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    shape = _topk_plan(self, k, dim)[3]
    return return_types.topk(empty(shape, self.dtype, self.device), empty(shape, D.int64, self.device))


@topk_op.register_kernel("cpu")
def _topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    k, axis, n, shape = _topk_plan(self, k, dim)
    if not numel(shape):
        return return_types.topk(
            R.computed(shape, self.dtype, lambda: np.empty(shape, self.dtype.np)),
            R.computed(shape, D.int64, lambda: np.empty(shape, np.int64)),
        )
    if self.ndim == 0:
        return return_types.topk(from_array(self._array.copy(), self.dtype), from_array(np.zeros((), np.int64)))
    keys = _keys(self._array)
    if 8 * k < n:
        # Only k candidates need ordering: partition first (NaN counts as the largest there too), then
        # sort the candidates, taken in index order so that the stable sort breaks ties by index.
        part = np.argpartition(keys, n - k if largest else k - 1, axis=axis)
        candidates = np.sort(part[(slice(None),) * axis + (slice(n - k, n) if largest else slice(0, k),)], axis=axis)
        idx = np.take_along_axis(candidates, order(np.take_along_axis(keys, candidates, axis), axis, largest), axis)
    else:
        idx = order(keys, axis, largest)[(slice(None),) * axis + (slice(0, k),)]
    return return_types.topk(
        from_array(np.take_along_axis(self._array, idx, axis), self.dtype), from_array(idx.astype(np.int64))
    )


@topk_values.register_kernel("cpu")
def _topk_values(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, values, indices):
    return _write_pair("topk", _topk(self, k, dim, largest, sorted), values, indices, self.dtype)


@topk_values.register_meta
def _topk_values_meta(
    self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, values, indices
):
    return _write_pair_meta("topk", _topk_meta(self, k, dim, largest, sorted), values, indices, self.dtype)


# -- kthvalue, median, nanmedian, mode: reductions to one value and its index --------------------------


def _reduce_dim(self: Tensor, dim, keepdim: bool, name: str) -> tuple[int, tuple]:
    axis = _dim(self, dim)
    if self.ndim and self._shape[axis] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
    return axis, R.plan(self, axis, keepdim).shape


def _pick_meta(self: Tensor, shape: tuple) -> tuple:
    return empty(shape, self.dtype, self.device), empty(shape, D.int64, self.device)


def _pick(self: Tensor, axis: int, shape: tuple, chooser):
    """Values and int64 indices of one element per row along ``axis``; ``chooser(rows)`` gives, for
    a 2-D array of rows, the column picked in each."""
    if not numel(shape):
        return (
            R.computed(shape, self.dtype, lambda: np.empty(shape, self.dtype.np)),
            R.computed(shape, D.int64, lambda: np.empty(shape, np.int64)),
        )
    if self.ndim == 0:
        return from_array(self._array.copy(), self.dtype), from_array(np.zeros((), np.int64))
    rows = _as_2d(self._array, axis)
    columns = chooser(rows).astype(np.int64)
    values = rows[np.arange(rows.shape[0]), columns]
    return from_array(values.reshape(shape), self.dtype), from_array(columns.reshape(shape))


kthvalue_op = define(
    "kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", TAGS
)
kthvalue_values = define(
    "kthvalue.values(Tensor self, int k, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) "
    "-> (Tensor(a!) values, Tensor(b!) indices)",
    OUT_TAGS,
)


def _kthvalue_plan(self: Tensor, k, dim, keepdim: bool) -> tuple:
    """The checks; k, the axis and the results' shape."""
    k = R.as_int(k, "k")
    axis, shape = _reduce_dim(self, dim, keepdim, "kthvalue")
    n = self._shape[axis] if self.ndim else 1
    if not 1 <= k <= max(n, 1) or (n == 0 and numel(self._shape)):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    if self.dtype.category == D.COMPLEX or self.dtype is D.bool_:
        raise unsupported("kthvalue", self.dtype)
    return k, axis, shape


@kthvalue_op.register_meta
def _kthvalue_meta(self: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    return return_types.kthvalue(*_pick_meta(self, _kthvalue_plan(self, k, dim, keepdim)[2]))


@kthvalue_op.register_kernel("cpu")
def _kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    k, axis, shape = _kthvalue_plan(self, k, dim, keepdim)

    def chooser(rows):
        return np.argpartition(_keys(rows), k - 1, axis=1)[:, k - 1]

    return return_types.kthvalue(*_pick(self, axis, shape, chooser))


@kthvalue_values.register_kernel("cpu")
def _kthvalue_values(self: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, values, indices):
    return _write_pair("kthvalue", _kthvalue(self, k, dim, keepdim), values, indices, self.dtype)


@kthvalue_values.register_meta
def _kthvalue_values_meta(self: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, values, indices):
    return _write_pair_meta("kthvalue", _kthvalue_meta(self, k, dim, keepdim), values, indices, self.dtype)


def _median_chooser(ignore_nan: bool):
    def chooser(rows: np.ndarray) -> np.ndarray:
        keys = _keys(rows)
        nan = _is_nan(keys)
        n = keys.shape[1]
        if nan is None or not nan.any():
            return np.argpartition(keys, (n - 1) // 2, axis=1)[:, (n - 1) // 2]
        if not ignore_nan:
            # A row with NaN has the median NaN, found at its first NaN.
            plain = np.argpartition(keys, (n - 1) // 2, axis=1)[:, (n - 1) // 2]
            return np.where(nan.any(axis=1), np.argmax(nan, axis=1), plain)
        # NaN sorts last, so the lower middle of the non-NaN values is at (count - 1) // 2.
        count = n - nan.sum(axis=1)
        position = np.maximum(count - 1, 0) // 2
        return np.take_along_axis(np.argsort(keys, axis=1, kind="stable"), position[:, None], axis=1)[:, 0]

    return chooser


def _empty_median(dtype: D.dtype):
    """The median of nothing: NaN, which PyTorch's C++ cast turns into the int32/int64 minimum (its
    32-bit pattern truncated to 0 for the narrower integer types)."""
    if dtype.category == D.FLOATING:
        return np.nan
    if dtype in (D.int32, D.int64):
        return np.iinfo(dtype.np).min
    return 0


def _median_family(name: str, ignore_nan: bool):
    every = define(f"{name}(Tensor self) -> Tensor", TAGS)
    every_out = define(f"{name}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", OUT_TAGS)
    along = define(f"{name}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", TAGS)
    along_out = define(
        f"{name}.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) "
        "-> (Tensor(a!) values, Tensor(b!) indices)",
        OUT_TAGS,
    )
    chooser = _median_chooser(ignore_nan)
    named = getattr(return_types, name)

    def check(self: Tensor) -> None:
        if self.dtype.category == D.COMPLEX or self.dtype is D.bool_:
            raise unsupported(name, self.dtype)

    @every.register_meta
    def _every_meta(self: Tensor) -> Tensor:
        check(self)
        return empty((), self.dtype, self.device)

    @every.register_kernel("cpu")
    def _every(self: Tensor) -> Tensor:
        check(self)
        if not numel(self._shape):
            return from_array(np.full((), _empty_median(self.dtype), self.dtype.np), self.dtype)
        flat = self._array.reshape(1, -1)
        column = chooser(flat)[0]
        return from_array(flat[0, column].copy(), self.dtype)

    @along.register_meta
    def _along_meta(self: Tensor, dim: int, keepdim: bool = False):
        _, shape = _reduce_dim(self, dim, keepdim, name)
        check(self)
        return named(*_pick_meta(self, shape))

    @along.register_kernel("cpu")
    def _along(self: Tensor, dim: int, keepdim: bool = False):
        axis, shape = _reduce_dim(self, dim, keepdim, name)
        check(self)
        return named(*_pick(self, axis, shape, chooser))

    @every_out.register_meta
    def _every_out_meta(self: Tensor, *, out):
        R.check_out_dtype(out, self.dtype)
        return R.fit_out(out, _every_meta(self))

    @every_out.register_kernel("cpu")
    def _every_out(self: Tensor, *, out):
        R.check_out_dtype(out, self.dtype)
        return R.write_out(out, _every(self))

    @along_out.register_meta
    def _along_out_meta(self: Tensor, dim: int, keepdim: bool = False, *, values, indices):
        return _write_pair_meta(name, _along_meta(self, dim, keepdim), values, indices, self.dtype)

    @along_out.register_kernel("cpu")
    def _along_out(self: Tensor, dim: int, keepdim: bool = False, *, values, indices):
        return _write_pair(name, _along(self, dim, keepdim), values, indices, self.dtype)

    return every, along


median_ops = _median_family("median", ignore_nan=False)
nanmedian_ops = _median_family("nanmedian", ignore_nan=True)


mode_op = define("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", TAGS)
mode_values = define(
    "mode.values(Tensor self, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) "
    "-> (Tensor(a!) values, Tensor(b!) indices)",
    OUT_TAGS,
)


def _mode_chooser(rows: np.ndarray) -> np.ndarray:
    """The most frequent value of each row (the smallest among equally frequent ones), at its last
    occurrence: a stable sort puts equal values in runs; the running length of a run peaks at its end."""
    idx = np.argsort(_keys(rows), axis=1, kind="stable")
    ordered = np.take_along_axis(rows, idx, axis=1)
    n = rows.shape[1]
    starts = np.ones(ordered.shape, np.bool_)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    position = np.arange(n)
    run_start = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    length = position - run_start
    end = np.argmax(length, axis=1)
    return idx[np.arange(rows.shape[0]), end]


def _mode_plan(self: Tensor, dim, keepdim: bool) -> tuple[int, tuple]:
    axis = _dim(self, dim)
    if self.ndim and self._shape[axis] == 0:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    shape = R.plan(self, axis, keepdim).shape
    if self.dtype.category == D.COMPLEX:
        raise unsupported("mode", self.dtype)
    return axis, shape


@mode_op.register_meta
def _mode_meta(self: Tensor, dim: int = -1, keepdim: bool = False):
    return return_types.mode(*_pick_meta(self, _mode_plan(self, dim, keepdim)[1]))


@mode_op.register_kernel("cpu")
def _mode(self: Tensor, dim: int = -1, keepdim: bool = False):
    axis, shape = _mode_plan(self, dim, keepdim)
    return return_types.mode(*_pick(self, axis, shape, _mode_chooser))


@mode_values.register_meta
def _mode_values_meta(self: Tensor, dim: int = -1, keepdim: bool = False, *, values, indices):
    return _write_pair_meta("mode", _mode_meta(self, dim, keepdim), values, indices, self.dtype)


@mode_values.register_kernel("cpu")
def _mode_values(self: Tensor, dim: int = -1, keepdim: bool = False, *, values, indices):
    return _write_pair("mode", _mode(self, dim, keepdim), values, indices, self.dtype)


# -- the Python surface -------------------------------------------------------------------------------


def _pair_out(name: str, out) -> tuple:
    if not isinstance(out, list | tuple) or len(out) != 2:
        raise TypeError(f"{name}(): argument 'out' must be tuple of 2 Tensors (values, indices)")
    return tuple(out)


def _bool_arg(value, name: str, fn: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{fn}(): argument '{name}' must be bool, not {type(value).__name__}")
    return bool(value)


def _int_arg(value, name: str, fn: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer | Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(value).__name__}")
    return int(value)


@public("sort")
def sort(input, dim=-1, descending=False, stable=None, *, out=None):
    """``ember.sort``: ``return_types.sort(values, indices)`` along ``dim``; ``stable`` keeps ties in order."""
    dim, descending = _int_arg(dim, "dim", "sort"), _bool_arg(descending, "descending", "sort")
    if stable is not None:
        stable = _bool_arg(stable, "stable", "sort")
    if out is None:
        return sort_stable(input, stable=stable, dim=dim, descending=descending)
    values, indices = _pair_out("sort", out)
    return sort_values_stable(input, stable=stable, dim=dim, descending=descending, values=values, indices=indices)


@method("sort")
def _sort_method(self, dim=-1, descending=False, stable=None):
    return sort(self, dim, descending, stable)


@public("argsort")
def argsort(input, dim=-1, descending=False, stable=False, *, out=None):
    """``ember.argsort``: the indices that sort ``input`` along ``dim``."""
    dim, descending = _int_arg(dim, "dim", "argsort"), _bool_arg(descending, "descending", "argsort")
    stable = _bool_arg(stable, "stable", "argsort")
    if out is None:
        return argsort_stable(input, stable=stable, dim=dim, descending=descending)
    return argsort_out(input, stable=stable, dim=dim, descending=descending, out=out)


@method("argsort")
def _argsort_method(self, dim=-1, descending=False, stable=False):
    return argsort(self, dim, descending, stable)


@public("msort")
def msort(input, *, out=None):
    """``ember.msort``: ``input`` sorted along its first dimension."""
    return msort_op(input) if out is None else msort_out(input, out=out)


@method("msort")
def _msort_method(self):
    return msort_op(self)


@public("topk")
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """``ember.topk``: the ``k`` largest (or smallest) elements along ``dim`` and their indices."""
    k, dim = _int_arg(k, "k", "topk"), _int_arg(dim, "dim", "topk")
    largest, sorted = _bool_arg(largest, "largest", "topk"), _bool_arg(sorted, "sorted", "topk")
    if out is None:
        return topk_op(input, k, dim, largest, sorted)
    values, indices = _pair_out("topk", out)
    return topk_values(input, k, dim, largest, sorted, values=values, indices=indices)


@method("topk")
def _topk_method(self, k, dim=-1, largest=True, sorted=True):
    return topk(self, k, dim, largest, sorted)


@public("kthvalue")
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """``ember.kthvalue``: the ``k``-th smallest element along ``dim`` (1-based) and its index."""
    k, dim = _int_arg(k, "k", "kthvalue"), _int_arg(dim, "dim", "kthvalue")
    keepdim = _bool_arg(keepdim, "keepdim", "kthvalue")
    if out is None:
        return kthvalue_op(input, k, dim, keepdim)
    values, indices = _pair_out("kthvalue", out)
    return kthvalue_values(input, k, dim, keepdim, values=values, indices=indices)


@method("kthvalue")
def _kthvalue_method(self, k, dim=-1, keepdim=False):
    return kthvalue(self, k, dim, keepdim)


def _median_surface(name: str, ops: tuple):
    every, along = ops
    packet = along.packet
    no_dim = object()

    def fn(input, dim=no_dim, keepdim=False, *, out=None):
        if dim is no_dim or dim is None:
            if keepdim is not False:
                raise TypeError(f"{name}(): keepdim needs a dim")
            return every(input) if out is None else packet.out(input, out=out)
        dim, keepdim = _int_arg(dim, "dim", name), _bool_arg(keepdim, "keepdim", name)
        if out is None:
            return along(input, dim, keepdim)
        values, indices = _pair_out(name, out)
        return packet.dim_values(input, dim, keepdim, values=values, indices=indices)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``ember.{name}``: the lower median, of everything or along ``dim`` with its index."
    public(name)(fn)
    method(name)(lambda self, dim=no_dim, keepdim=False: fn(self, dim, keepdim))


_median_surface("median", median_ops)
_median_surface("nanmedian", nanmedian_ops)


@public("mode")
def mode(input, dim=-1, keepdim=False, *, out=None):
    """``ember.mode``: the most frequent value along ``dim`` and the index of its last occurrence."""
    dim, keepdim = _int_arg(dim, "dim", "mode"), _bool_arg(keepdim, "keepdim", "mode")
    if out is None:
        return mode_op(input, dim, keepdim)
    values, indices = _pair_out("mode", out)
    return mode_values(input, dim, keepdim, values=values, indices=indices)


@method("mode")
def _mode_method(self, dim=-1, keepdim=False):
    return mode(self, dim, keepdim)


R.accept_numpy_names(("sort", "argsort", "kthvalue", "median", "nanmedian", "mode"))
