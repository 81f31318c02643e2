"""Samples for ``segment_reduce`` and its backward op (``ember.core.aten.reductions.segments``) and for
``hash_tensor`` (``.hashing``): every reduction with lengths and with offsets (empty segments, an
offset past the start, ``initial``), a reduced axis after leading dims with one row of lengths per
position, ties for max/min and zeros for prod in the backward op, and the errors; hash_tensor over
every dtype it takes, over dims or everything, with keepdim and ``out=``."""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, ErrorSample, OpInfo, Sample, T, make

REDUCTIONS = ("sum", "mean", "max", "min", "prod")


def _ints(values) -> T:
    return T(np.array(values, np.int64))


def _segment_samples(dtype: str, rng) -> list[Sample]:
    data = make((6, 3), dtype, rng, low=-2, high=2)
    out = []
    for reduce in REDUCTIONS:
        out += [
            Sample((data, reduce), {"lengths": _ints([2, 0, 4])}, f"{reduce} lengths"),
            Sample((data, reduce), {"offsets": _ints([1, 3, 3, 6])}, f"{reduce} offsets"),
            Sample((data, reduce), {"lengths": _ints([3, 3]), "initial": 0.5}, f"{reduce} initial"),
            Sample(
                (make((2, 5, 2), dtype, rng, low=-2, high=2), reduce),
                {"lengths": _ints([[1, 4], [3, 2]]), "axis": 1},
                f"{reduce} axis 1",
            ),
        ]
    out.append(Sample((make((4, 3), dtype, rng, layout="transposed"), "sum"), {"lengths": _ints([1, 3])}, "strided"))
    out.append(Sample((data, "sum"), {"lengths": T(np.array([5, 1], np.int32)), "axis": -2}, "int32 lengths"))
    return out


def _segment_errors() -> list[ErrorSample]:
    data = T(np.ones((4, 3), np.float32))
    return [
        ErrorSample(Sample((data, "sum"), {"lengths": _ints([1, 1])}), RuntimeError, "sum to data.size"),
        ErrorSample(Sample((data, "sum"), {"lengths": _ints([5, -1])}), RuntimeError, "negative value"),
        ErrorSample(Sample((data, "foo"), {"lengths": _ints([4])}), RuntimeError, "reduce argument must be"),
        ErrorSample(Sample((data, "sum")), RuntimeError, "Either lengths or offsets"),
        ErrorSample(Sample((data, "sum"), {"lengths": _ints([4]), "indices": _ints([4])}), RuntimeError, "indices"),
        ErrorSample(Sample((data, "sum"), {"lengths": _ints([4]), "axis": 1}), RuntimeError, "last dimension"),
        ErrorSample(Sample((data, "sum"), {"offsets": _ints([0, 3, 1])}), RuntimeError, "segment_length >= 0"),
        ErrorSample(
            Sample((T(np.ones((4, 3), np.int64)), "sum"), {"lengths": _ints([4])}),
            NotImplementedError,
            "not implemented for 'Long'",
        ),
        ErrorSample(
            Sample((data, "sum"), {"lengths": T(np.array([4.0], np.float32))}),
            NotImplementedError,
            "not implemented for 'Float'",
        ),
    ]


def _backward_samples(dtype: str, rng) -> list[Sample]:
    values = np.array([[0.0, 2.0], [3.0, 2.0], [0.0, 2.0], [1.5, 1.0], [3.0, -1.0]])
    data = T(values.astype(make((1,), dtype, rng).array.dtype))
    out = []
    for reduce in REDUCTIONS:
        for lengths in ([5], [1, 4], [2, 0, 3]):
            grad = make((len(lengths), 2), dtype, rng, low=-2, high=2)
            output = T(_reference(values, reduce, lengths).astype(data.array.dtype))
            out.append(Sample((grad, output, data, reduce), {"lengths": _ints(lengths)}, f"{reduce} {lengths}"))
    return out


def _reference(values: np.ndarray, reduce: str, lengths) -> np.ndarray:
    """The forward result the backward op is given (computed here, independently of the op)."""
    fold = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[reduce]
    identity = {"sum": 0.0, "mean": np.nan, "max": -np.inf, "min": np.inf, "prod": 1.0}[reduce]
    rows, start = [], 0
    for n in lengths:
        rows.append(fold(values[start : start + n], axis=0) if n else np.full(values.shape[1], identity))
        start += n
    return np.stack(rows)


def _hash_samples(dtype: str, rng) -> list[Sample]:
    x = make((3, 4), dtype, rng)
    return [
        Sample((x,), name="everything"),
        Sample((x, 1), name="dim 1"),
        Sample((x, [0, 1]), {"keepdim": True}, "both dims, keepdim"),
        Sample((make((2, 3), dtype, rng, layout="transposed"), 0), name="transposed"),
        Sample((make((), dtype, rng),), name="0-d"),
        Sample((make((0, 3), dtype, rng), 1), name="empty, other dim"),
    ]


def _hash_errors() -> list[ErrorSample]:
    x = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample((x,), {"mode": 1}), RuntimeError, "Unknown hash_tensor mode: 1"),
        ErrorSample(Sample((T(np.zeros(0, np.float32)),)), RuntimeError, "Expected reduction dim to be specified"),
        ErrorSample(Sample((T(np.zeros((0, 3), np.float32)), 0)), IndexError, "to have non-zero size"),
        ErrorSample(Sample((T(np.ones(2, np.complex64)),)), NotImplementedError, "not implemented for 'ComplexFloat'"),
    ]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _backward(lib, *a, **k):
    return lib.ops.aten._segment_reduce_backward.default(*a, **k)


OPS = [
    OpInfo("segment_reduce", _call("segment_reduce"), FLOATS, _segment_samples, _segment_errors),
    OpInfo("_segment_reduce_backward", _backward, FLOATS, _backward_samples, transforms=False),
    OpInfo(
        "hash_tensor",
        _call("hash_tensor"),
        ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"),
        _hash_samples,
        _hash_errors,
        out=True,
    ),
    OpInfo("Tensor.hash_tensor", lambda lib, x, *a, **k: x.hash_tensor(*a, **k), ("float32",), _hash_samples),
]
