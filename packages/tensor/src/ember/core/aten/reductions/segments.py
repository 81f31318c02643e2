"""``segment_reduce``: reductions over consecutive runs ("segments") of one axis of a tensor.

The segments are given by ``lengths`` (the size of each run, which follow one another from the
start of the axis) or by ``offsets`` (each run starts at ``offsets[i]`` and ends at
``offsets[i + 1]``). Either may have leading dims matching ``data``'s, one row of segments per
position; the reduced axis must then be the last dim of ``lengths`` (``axis == lengths.dim() - 1``).

The arithmetic follows PyTorch's kernel exactly: each segment starts from ``initial`` (or the
reduction's identity: 0, 1, -inf for max, +inf for min), folds its elements in order in the data's
own dtype (so half-precision sums round at every step, as PyTorch's do), and a NaN element makes a
max or min NaN. A mean divides by the length unless the segment is empty (then NaN, or ``initial``
when given). The backward op is PyTorch's too, quirks included: the gradient of a max or min goes
to every element equal to the result, and where several are, the positive gradients among them are
divided by their count; a product's gradient at a zero or NaN element is formed from the product
of the others (times ``initial``).

Both run as one NumPy step per position within a segment (vectorized over segments and the other
dims), so the cost grows with the longest segment, not with the number of segments.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.dispatch import define
from ember.core.layout import normalize_dim
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor, empty, from_array

segment_reduce = define(
    "segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, "
    "int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
    ("core",),
)
segment_reduce_backward = define(
    "_segment_reduce_backward(Tensor grad, Tensor output, Tensor data, str reduce, *, Tensor? lengths=None, "
    "Tensor? offsets=None, int axis=0, Scalar? initial=None) -> Tensor",
    ("core",),
)

REDUCTIONS = ("sum", "mean", "max", "min", "prod")
_FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)
_INDEX = (D.int32, D.int64)


def _check(data: Tensor, reduce: str, lengths, indices, offsets, axis: int, name: str) -> tuple[int, Tensor, bool]:
    """The wrapped axis, the segment tensor and whether it holds offsets; PyTorch's checks and messages."""
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    axis = normalize_dim(axis, data.ndim)
    if indices is not None:
        raise RuntimeError(f"{name}(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError(f"{name}(): Either lengths or offsets must be defined.")
    segments, is_offsets = (lengths, False) if lengths is not None else (offsets, True)
    if data.dtype not in _FLOATS:
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for '{type_name(data.dtype)}'")
    if segments.dtype not in _INDEX:
        which = "offsets" if is_offsets else "lengths"
        raise NotImplementedError(
            f"\"_segment_reduce_{which}_cpu_kernel1\" not implemented for '{type_name(segments.dtype)}'"
        )
    if segments.ndim > data.ndim:
        raise RuntimeError(f"{name}(): Expected data.dim() >= lengths.dim()")
    if segments.ndim == 0 or axis != segments.ndim - 1:
        raise RuntimeError(f"{name}(): Expected axis to be the last dimension of lengths but got {axis}.")
    if tuple(segments._shape[:-1]) != tuple(data._shape[:axis]):
        raise RuntimeError(
            f"{name}(): Expected the leading dims of lengths {list(segments._shape[:-1])} to match data's "
            f"{list(data._shape[:axis])}"
        )
    if is_offsets and segments._shape[-1] < 1:
        raise RuntimeError(f"{name}(): Expected offsets to hold at least one entry.")
    return axis, segments, is_offsets


def _output_shape(data: Tensor, axis: int, segments: Tensor, is_offsets: bool) -> tuple:
    count = segments._shape[-1] - 1 if is_offsets else segments._shape[-1]
    return (*data._shape[:axis], count, *data._shape[axis + 1 :])


def _starts_and_lengths(segments: np.ndarray, is_offsets: bool, outer: int) -> tuple[np.ndarray, np.ndarray]:
    """Each segment's first index along the axis and its length, as (outer, segments) int64 arrays."""
    rows = segments.astype(np.int64).reshape(outer, -1)
    if is_offsets:
        starts, lengths = rows[:, :-1], np.diff(rows, axis=1)
    else:
        lengths = rows
        starts = np.cumsum(rows, axis=1) - rows
    if (lengths < 0).any():
        raise RuntimeError("Expected segment_length >= 0 to be true, but got false.")
    return starts, lengths


def _as_3d(array: np.ndarray, axis: int) -> np.ndarray:
    """``array`` as (dims before axis, axis, dims after axis)."""
    shape = array.shape
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    return array.reshape(outer, shape[axis], inner)


def _identity(reduce: str, initial, dtype: np.dtype):
    if initial is not None:
        return dtype.type(initial)
    return dtype.type({"max": -np.inf, "min": np.inf, "prod": 1}.get(reduce, 0))


def _gather(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[o, rows[o, s], :]`` for (outer, axis, inner) values and (outer, segments) rows."""
    return np.take_along_axis(values, rows[:, :, None], axis=1)


def _forward(data: np.ndarray, starts, lengths, reduce: str, initial) -> np.ndarray:
    dtype = data.dtype
    acc = np.full((data.shape[0], starts.shape[1], data.shape[2]), _identity(reduce, initial, dtype), dtype)
    limit = max(data.shape[1] - 1, 0)
    with np.errstate(all="ignore"):
        for j in range(int(lengths.max(initial=0))):
            live = (j < lengths)[:, :, None]
            value = _gather(data, np.minimum(starts + j, limit))
            if reduce in ("sum", "mean"):
                step = acc + value
            elif reduce == "prod":
                step = acc * value
            else:
                fold = np.maximum if reduce == "max" else np.minimum
                step = np.where(np.isnan(value), value, fold(acc, value))
            acc = np.where(live, step, acc).astype(dtype, copy=False)
        if reduce == "mean":
            counts = lengths[:, :, None]
            divided = (acc / counts.astype(dtype)).astype(dtype, copy=False)
            acc = np.where((counts > 0) & ~np.isnan(acc), divided, acc)
            if initial is None:
                acc = np.where(counts == 0, dtype.type(np.nan), acc)
    return acc.astype(dtype, copy=False)


def _segments_of(data: Tensor, axis: int, segments: Tensor, is_offsets: bool):
    values = _as_3d(np.asarray(data._array), axis)
    starts, lengths = _starts_and_lengths(np.asarray(segments._array), is_offsets, values.shape[0])
    return values, starts, lengths


@segment_reduce.register_meta
def _segment_reduce_meta(
    data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
) -> Tensor:
    axis, segments, is_offsets = _check(data, reduce, lengths, indices, offsets, axis, "segment_reduce")
    return empty(_output_shape(data, axis, segments, is_offsets), data.dtype, data.device)


@segment_reduce.register_kernel("cpu")
def _segment_reduce_cpu(
    data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
) -> Tensor:
    axis, segments, is_offsets = _check(data, reduce, lengths, indices, offsets, axis, "segment_reduce")
    if not unsafe and not is_offsets:
        counts = np.asarray(segments._array, np.int64)
        if counts.size and counts.min() < 0:
            raise RuntimeError("lengths contains negative value!")
        if (counts.sum(axis=-1) != data._shape[axis]).any():
            raise RuntimeError(
                "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) "
                "when !unsafe."
            )
    values, starts, counts = _segments_of(data, axis, segments, is_offsets)
    result = _forward(values, starts, counts, reduce, initial)
    return from_array(np.ascontiguousarray(result).reshape(_output_shape(data, axis, segments, is_offsets)), data.dtype)


def _backward(grad, output, data, starts, lengths, reduce: str, initial) -> np.ndarray:
    dtype = data.dtype
    result = np.zeros(data.shape, dtype)
    limit = max(data.shape[1] - 1, 0)
    longest = int(lengths.max(initial=0))
    outer = np.arange(data.shape[0])[:, None, None]
    inner = np.arange(data.shape[2])[None, None, :]

    def write(j: int, value: np.ndarray, where: np.ndarray) -> None:
        rows = np.broadcast_to(np.minimum(starts + j, limit)[:, :, None], value.shape)
        o = np.broadcast_to(outer, value.shape)
        i = np.broadcast_to(inner, value.shape)
        result[o[where], rows[where], i[where]] = value[where]

    with np.errstate(all="ignore"):
        if reduce in ("max", "min"):
            ties = np.zeros(grad.shape, np.int64)
            for j in range(longest):
                value = _gather(data, np.minimum(starts + j, limit))
                hit = (j < lengths)[:, :, None] & (np.isnan(value) | (value == output))
                ties += hit
                write(j, grad, hit)
            for j in range(longest):
                current = _gather(result, np.minimum(starts + j, limit))
                shared = (j < lengths)[:, :, None] & (ties >= 2) & (current > 0)
                write(j, (current / ties.astype(dtype)).astype(dtype), shared)
        elif reduce in ("sum", "mean"):
            share = grad if reduce == "sum" else (grad / lengths[:, :, None].astype(dtype)).astype(dtype)
            for j in range(longest):
                write(j, share, np.broadcast_to((j < lengths)[:, :, None], share.shape))
        else:  # prod
            scaled = (grad * output).astype(dtype)
            start = _identity("prod", initial, dtype)
            for j in range(longest):
                live = np.broadcast_to((j < lengths)[:, :, None], grad.shape)
                value = _gather(data, np.minimum(starts + j, limit))
                special = np.isnan(value) | (value == 0)
                plain = (scaled / value).astype(dtype)
                if (special & live).any():
                    others = np.full(grad.shape, start, dtype)
                    for k in range(longest):
                        if k != j:
                            other = _gather(data, np.minimum(starts + k, limit))
                            others = np.where((k < lengths)[:, :, None], (others * other).astype(dtype), others)
                    plain = np.where(special, (grad * others).astype(dtype), plain)
                write(j, plain, live)
    return result


@segment_reduce_backward.register_meta
def _segment_reduce_backward_meta(grad, output, data, reduce, *, lengths=None, offsets=None, axis=0, initial=None):
    _check(data, reduce, lengths, None, offsets, axis, "_segment_reduce_backward")
    return empty(data._shape, grad.dtype, data.device)


@segment_reduce_backward.register_kernel("cpu")
def _segment_reduce_backward_cpu(grad, output, data, reduce, *, lengths=None, offsets=None, axis=0, initial=None):
    axis, segments, is_offsets = _check(data, reduce, lengths, None, offsets, axis, "_segment_reduce_backward")
    values, starts, counts = _segments_of(data, axis, segments, is_offsets)
    g = _as_3d(np.asarray(grad._array, values.dtype), axis)
    out = _as_3d(np.asarray(output._array, values.dtype), axis)
    result = _backward(g, out, values, starts, counts, reduce, initial)
    return from_array(np.ascontiguousarray(result).reshape(data._shape), data.dtype)


@public("segment_reduce")
def _segment_reduce_function(
    data: Tensor,
    reduce: str,
    *,
    lengths: Tensor | None = None,
    indices: Tensor | None = None,
    offsets: Tensor | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial=None,
) -> Tensor:
    """Reduce (``"sum"``, ``"mean"``, ``"max"``, ``"min"`` or ``"prod"``) each segment of ``data`` along
    ``axis``; the segments are given by ``lengths`` or by ``offsets``."""
    return segment_reduce(
        data, reduce, lengths=lengths, indices=indices, offsets=offsets, axis=axis, unsafe=unsafe, initial=initial
    )
