"""Samples for ``bincount`` and ``histc`` (``ember.core.aten.reductions.counting``): weights of each
dtype, ``minlength`` beyond and within the data, empty inputs; histc with a given range (values
outside it and on its edges), the range read from the data, a constant tensor, every float dtype,
and both ops' errors."""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, ErrorSample, OpInfo, Sample, T, make

INTS = ("int64", "int32", "int16", "int8", "uint8")


def _bincount_samples(dtype: str, rng) -> list[Sample]:
    x = T(rng.integers(0, 7, size=20).astype(np.dtype(dtype)))
    return [
        Sample((x,), name="counts"),
        Sample((x,), {"minlength": 10}, "minlength beyond"),
        Sample((x,), {"minlength": 2}, "minlength within"),
        Sample((x, make((20,), "float32", rng)), name="float32 weights"),
        Sample((x, make((20,), "float64", rng)), name="float64 weights"),
        Sample((x, make((20,), "int64", rng, low=0)), name="int64 weights"),
        Sample((T(np.zeros(0, np.dtype(dtype))),), {"minlength": 3}, "empty"),
    ]


def _bincount_errors() -> list[ErrorSample]:
    ints = T(np.array([1, 3, 3, 0]))
    return [
        ErrorSample(Sample((T(np.array([1, -3])),)), RuntimeError, "non-negative integral inputs"),
        ErrorSample(Sample((T(np.ones((2, 2), np.int64)),)), RuntimeError, "1-d non-negative"),
        ErrorSample(Sample((ints,), {"minlength": -1}), RuntimeError, "minlength should be >= 0"),
        ErrorSample(Sample((ints, T(np.ones(3, np.float32)))), RuntimeError, "same length as input"),
        ErrorSample(Sample((T(np.ones(2, np.float32)),)), NotImplementedError, "not implemented for 'Float'"),
    ]


def _histc_samples(dtype: str, rng) -> list[Sample]:
    x = make((40,), dtype, rng, low=-3, high=3)
    return [
        # The first two give the range (the lowering sweeps trace two samples with symbolic shapes).
        Sample((x,), {"bins": 7, "min": -2, "max": 2.5}, "range given"),
        Sample((make((5,), dtype, rng, low=-3, high=3),), {"bins": 3, "min": -1, "max": 1}, "part outside"),
        Sample((x,), {"bins": 13}, "range from the data"),
        Sample((make((3, 4), dtype, rng, layout="transposed"),), {"bins": 5}, "transposed"),
        Sample((T(np.full(4, 1.5, x.array.dtype)),), {"bins": 4}, "constant"),
        Sample((make((0,), dtype, rng),), {"bins": 3}, "empty"),
        Sample((x,), {}, "100 bins"),
    ]


def _histc_edges(dtype: str, rng) -> list[Sample]:
    values = np.array([-2.0, 2.5, 0.0, 1.0, -3.0, 3.0, 0.5], np.float64).astype(make((1,), dtype, rng).array.dtype)
    return [Sample((T(values),), {"bins": 9, "min": -2, "max": 2.5}, "values on the edges")]


def _histc_errors() -> list[ErrorSample]:
    x = T(np.array([1.0, 2.0], np.float32))
    return [
        ErrorSample(Sample((T(np.array([1, 2])),), {"bins": 4}), NotImplementedError, "not implemented for 'Long'"),
        ErrorSample(Sample((x,), {"bins": 0}), RuntimeError, "bins must be > 0"),
        ErrorSample(Sample((x,), {"bins": 3, "min": 3, "max": 1}), RuntimeError, "max must be larger than min"),
        ErrorSample(Sample((T(np.array([1.0, np.inf], np.float32)),), {"bins": 3}), RuntimeError, "is not finite"),
    ]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _method(name):
    return lambda lib, self, *a, **k: getattr(self, name)(*a, **k)


OPS = [
    OpInfo("bincount", _call("bincount"), INTS, _bincount_samples, _bincount_errors, meta=False),
    OpInfo("Tensor.bincount", _method("bincount"), ("int64",), _bincount_samples, meta=False),
    OpInfo("histc", _call("histc"), FLOATS, _histc_samples, _histc_errors, out=True),
    OpInfo("Tensor.histc", _method("histc"), ("float32",), _histc_samples),
    # Values on the bins' edges and the range's ends: finite differences jump there, so no transforms.
    OpInfo("histc_edges", _call("histc"), FLOATS, _histc_edges, transforms=False),
]
