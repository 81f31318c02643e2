"""``searchsorted`` and ``bucketize``: where values would go in sorted boundaries.

The search is PyTorch's binary search, run for every value at once: about log2(n) vectorized steps,
each comparing a value with the boundary in the middle of its interval. Running the same comparisons
as PyTorch (``!(mid >= v)`` for the left side, ``!(mid > v)`` for the right) gives its answers even
where the order is undefined (NaN among the boundaries, unsorted boundaries), not only where NumPy's
``searchsorted`` would agree.

Boundaries are 1-D, or N-D with the same leading dimensions as the values (one row of boundaries per
row of values); ``sorter`` gives each row's ascending order. Values and boundaries are compared in
their promoted dtype; the result is int64 (int32 with ``out_int32``), laid out contiguously.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core.api import method, public
from ember.core.creation import tensor as make_tensor
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.pointwise import type_name, unsupported
from ember.core.promotion import result_type
from ember.core.tensor import Tensor, empty, from_array

TAGS = ("core",)
_FLAGS = "bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None"

searchsorted_tensor = define(f"searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, {_FLAGS}) -> Tensor", TAGS)
searchsorted_tensor_out = define(
    f"searchsorted.Tensor_out(Tensor sorted_sequence, Tensor self, *, {_FLAGS}, Tensor(a!) out) -> Tensor(a!)", ("out",)
)
searchsorted_scalar = define(f"searchsorted.Scalar(Tensor sorted_sequence, Scalar self, *, {_FLAGS}) -> Tensor", TAGS)
searchsorted_scalar_out = define(
    f"searchsorted.Scalar_out(Tensor sorted_sequence, Scalar self, *, {_FLAGS}, Tensor(a!) out) -> Tensor(a!)", ("out",)
)
bucketize_tensor = define(
    "bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", TAGS
)
bucketize_tensor_out = define(
    "bucketize.Tensor_out(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False, "
    "Tensor(a!) out) -> Tensor(a!)",
    ("out",),
)
bucketize_scalar = define(
    "bucketize.Scalar(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", TAGS
)

_PREFIX = "torch.searchsorted(): "


def _check(boundaries: Tensor, values: Tensor, scalar: bool, right: bool, side, sorter) -> bool:
    """PyTorch's argument checks; returns whether to search from the right."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{_PREFIX}side can only be 'left' or 'right' but got {side}")
        if (side == "right") != right and right:
            raise RuntimeError(
                f"{_PREFIX}side and right can't be set to opposites, got side of {side} while right was True"
            )
        right = side == "right"
    if sorter is not None:
        if sorter.dtype is not D.int64:
            raise RuntimeError(
                f"{_PREFIX}sorter must be a tensor of long dtype but got dtype {type_name(sorter.dtype)}"
            )
        if sorter._shape != boundaries._shape:
            raise RuntimeError(
                f"{_PREFIX}boundary and sorter must have the same size, but got boundary tensor "
                f"{list(boundaries._shape)}and got sorter tensor {list(sorter._shape)}"
            )
    if scalar and boundaries.ndim != 1:
        raise RuntimeError(
            f"{_PREFIX}input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries "
            f"tensor dim({boundaries.ndim}) and input value's dim({values.ndim}) numel({numel(values._shape)})"
        )
    if boundaries.ndim != 1 and (
        boundaries.ndim != values.ndim or boundaries._shape[:-1] != values._shape[:-1] or boundaries.ndim == 0
    ):
        raise RuntimeError(
            f"{_PREFIX}boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and "
            f"input value tensor must match, but we got boundaries tensor {list(boundaries._shape)} and input value "
            f"tensor {list(values._shape)}"
        )
    return right


def _binary_search(rows: np.ndarray, sorter: np.ndarray | None, values: np.ndarray, right: bool) -> np.ndarray:
    """For each value (rows of ``values`` paired with rows of ``rows``), PyTorch's bound search."""
    count, n = rows.shape
    flat_rows = rows.reshape(-1)
    row_base = (np.arange(count, dtype=np.int64) * n)[:, None] if count > 1 else np.zeros((1, 1), np.int64)
    row_base = np.broadcast_to(row_base, values.shape)
    start = np.zeros(values.shape, np.int64)
    end = np.full(values.shape, n, np.int64)
    flat_sorter = None if sorter is None else sorter.reshape(-1)
    while True:
        active = start < end
        if not active.any():
            return start
        mid = start + ((end - start) >> 1)
        position = np.minimum(mid, n - 1) + row_base
        if flat_sorter is not None:
            position = flat_sorter[position] + row_base
        middle = flat_rows[position]
        go_right = ~(middle > values) if right else ~(middle >= values)
        start = np.where(active & go_right, mid + 1, start)
        end = np.where(active & ~go_right, mid, end)


def _sorted_fast_path(rows: np.ndarray, order, values: np.ndarray, right: bool) -> np.ndarray | None:
    """NumPy's ``searchsorted`` where it must agree with the binary search: one row of boundaries,
    truly ascending (no NaN, which fails the check). A NaN value goes past the end in both."""
    bound = rows[0] if order is None else rows[0][order[0]]
    if not (bound[1:] >= bound[:-1]).all():
        return None
    return np.searchsorted(bound, values.reshape(-1), side="right" if right else "left")


def _plan(boundaries: Tensor, values: Tensor, scalar: bool, out_int32: bool, right: bool, side, sorter) -> tuple:
    """The checks; the side to search from, the dtype values compare in and the result's dtype."""
    right = _check(boundaries, values, scalar, right, side, sorter)
    common = result_type(boundaries, values)
    if common.category == D.COMPLEX or common is D.bool_:
        raise unsupported("searchsorted_out", common)
    return right, common, D.int32 if out_int32 else D.int64


def _search_meta(boundaries: Tensor, values: Tensor, scalar: bool, out_int32: bool, right: bool, side, sorter):
    _, _, index_dtype = _plan(boundaries, values, scalar, out_int32, right, side, sorter)
    return empty(values._shape, index_dtype, boundaries.device)


def _search(boundaries: Tensor, values: Tensor, scalar: bool, out_int32: bool, right: bool, side, sorter) -> Tensor:
    right, common, index_dtype = _plan(boundaries, values, scalar, out_int32, right, side, sorter)
    n = boundaries._shape[-1]
    bound = R.values(boundaries, common) if boundaries.dtype is not common else R.values(boundaries)
    vals = R.values(values, common) if values.dtype is not common else R.values(values)
    if not numel(values._shape) or n == 0:
        return from_array(np.zeros(values._shape, index_dtype.np), index_dtype)
    rows = np.ascontiguousarray(bound).reshape(-1, n)
    order = None
    if sorter is not None:
        order = sorter._array.reshape(-1, n)
        if order.size and (order.min() < 0 or order.max() >= n):
            raise RuntimeError(f"{_PREFIX}sorter index out of range")
    found = _sorted_fast_path(rows, order, vals, right) if boundaries.ndim == 1 else None
    if found is None:
        grid = vals.reshape(1, -1) if boundaries.ndim == 1 else vals.reshape(rows.shape[0], -1)
        with np.errstate(invalid="ignore"):
            found = _binary_search(rows, order, grid, right)
    return from_array(found.reshape(values._shape).astype(index_dtype.np), index_dtype)


def _scalar_tensor(value, boundaries: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return make_tensor(value, device=boundaries.device)


def _kernels(search, write):
    """The kernels of every form, on ``search`` and ``write`` (the CPU's, or the meta device's)."""

    def searchsorted_tensor_kernel(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
        return search(sorted_sequence, self, self.ndim == 0, out_int32, right, side, sorter)

    def searchsorted_scalar_kernel(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
        return search(sorted_sequence, _scalar_tensor(self, sorted_sequence), True, out_int32, right, side, sorter)

    def bucketize_tensor_kernel(self, boundaries, *, out_int32=False, right=False):
        _check_boundaries(boundaries)
        return search(boundaries, self, False, out_int32, right, None, None)

    def bucketize_scalar_kernel(self, boundaries, *, out_int32=False, right=False):
        _check_boundaries(boundaries)
        return search(boundaries, _scalar_tensor(self, boundaries), True, out_int32, right, None, None)

    def searchsorted_tensor_out_kernel(
        sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None, out
    ):
        result = searchsorted_tensor_kernel(
            sorted_sequence, self, out_int32=out_int32, right=right, side=side, sorter=sorter
        )
        return write(out, result, out_int32)

    def searchsorted_scalar_out_kernel(
        sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None, out
    ):
        result = searchsorted_scalar_kernel(
            sorted_sequence, self, out_int32=out_int32, right=right, side=side, sorter=sorter
        )
        return write(out, result, out_int32)

    def bucketize_tensor_out_kernel(self, boundaries, *, out_int32=False, right=False, out):
        return write(out, bucketize_tensor_kernel(self, boundaries, out_int32=out_int32, right=right), out_int32)

    return {
        searchsorted_tensor: searchsorted_tensor_kernel,
        searchsorted_scalar: searchsorted_scalar_kernel,
        bucketize_tensor: bucketize_tensor_kernel,
        bucketize_scalar: bucketize_scalar_kernel,
        searchsorted_tensor_out: searchsorted_tensor_out_kernel,
        searchsorted_scalar_out: searchsorted_scalar_out_kernel,
        bucketize_tensor_out: bucketize_tensor_out_kernel,
    }


def _scalar_tensor(value, boundaries: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return make_tensor(value, device=boundaries.device)


def _check_out_dtype(out, out_int32: bool) -> None:
    expected = D.int32 if out_int32 else D.int64
    if isinstance(out, Tensor) and out.dtype is not expected:
        raise RuntimeError(
            f"{_PREFIX}output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether "
            f"out_int32 flag is True, but we got output tensor's dtype {type_name(out.dtype)} and out_int32 flag is "
            f"{out_int32}"
        )


def _write(out, result: Tensor, out_int32: bool) -> Tensor:
    _check_out_dtype(out, out_int32)
    return R.write_out(out, result)


def _write_meta(out, result: Tensor, out_int32: bool) -> Tensor:
    _check_out_dtype(out, out_int32)
    return R.fit_out(out, result)


def _check_boundaries(boundaries: Tensor) -> None:
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")


for _op, _cpu in _kernels(_search, _write).items():
    _op.register_kernel("cpu")(_cpu)
for _op, _meta in _kernels(_search_meta, _write_meta).items():
    _op.register_meta(_meta)


# -- the Python surface -------------------------------------------------------------------------------


def _flag(value, name: str, fn: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{fn}(): argument '{name}' must be bool, not {type(value).__name__}")
    return bool(value)


@public("searchsorted")
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """``ember.searchsorted``: the indices at which ``input`` would be inserted to keep each row sorted."""
    if not isinstance(sorted_sequence, Tensor):
        raise TypeError(
            f"searchsorted(): argument 'sorted_sequence' must be Tensor, not {type(sorted_sequence).__name__}"
        )
    out_int32, right = _flag(out_int32, "out_int32", "searchsorted"), _flag(right, "right", "searchsorted")
    if side is not None and not isinstance(side, str):
        raise TypeError(f"searchsorted(): argument 'side' must be str, not {type(side).__name__}")
    flags = {"out_int32": out_int32, "right": right, "side": side, "sorter": sorter}
    if isinstance(input, Tensor):
        if out is None:
            return searchsorted_tensor(sorted_sequence, input, **flags)
        return searchsorted_tensor_out(sorted_sequence, input, **flags, out=out)
    if isinstance(input, bool) or not isinstance(input, int | float | np.integer | np.floating):
        raise TypeError(f"searchsorted(): argument 'input' must be Tensor or Number, not {type(input).__name__}")
    if out is None:
        return searchsorted_scalar(sorted_sequence, input, **flags)
    return searchsorted_scalar_out(sorted_sequence, input, **flags, out=out)


@public("bucketize")
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """``ember.bucketize``: the bucket of each element of ``input`` among the 1-D ``boundaries``."""
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"bucketize(): argument 'boundaries' must be Tensor, not {type(boundaries).__name__}")
    out_int32, right = _flag(out_int32, "out_int32", "bucketize"), _flag(right, "right", "bucketize")
    if isinstance(input, Tensor):
        if out is None:
            return bucketize_tensor(input, boundaries, out_int32=out_int32, right=right)
        return bucketize_tensor_out(input, boundaries, out_int32=out_int32, right=right, out=out)
    if isinstance(input, bool) or not isinstance(input, int | float | np.integer | np.floating):
        raise TypeError(f"bucketize(): argument 'input' must be Tensor or Number, not {type(input).__name__}")
    if out is not None:
        raise TypeError("bucketize(): out= is only accepted with a Tensor input")
    return bucketize_scalar(input, boundaries, out_int32=out_int32, right=right)


@method("bucketize")
def _bucketize_method(self, boundaries, *, out_int32=False, right=False):
    return bucketize(self, boundaries, out_int32=out_int32, right=right)
