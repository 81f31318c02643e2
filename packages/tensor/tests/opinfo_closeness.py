"""Samples for ``isclose`` (an op), and ``allclose`` and ``equal`` (Python bools), from
``ember.core.aten.pointwise.closeness``: near and far values, infinities, nan with and without
``equal_nan``, integers (compared in the default float dtype) and the tolerances' errors."""

from __future__ import annotations

import numpy as np
from opinfo import ALL_REAL, FLOATS, NP_DTYPES, ErrorSample, OpInfo, Sample, T, make


def _pairs(dtype: str, rng) -> list[Sample]:
    a = make((3, 4), dtype, rng, low=-3, high=4)
    out = [
        Sample((a, a), name="same"),
        Sample((a, make((3, 4), dtype, rng, low=-3, high=4)), name="different"),
        Sample((make((4,), dtype, rng), a), name="broadcasts"),
        Sample((make((0, 4), dtype, rng), make((0, 4), dtype, rng)), name="empty"),
    ]
    if dtype in FLOATS:
        values = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 100.0, 0.0], NP_DTYPES[dtype])
        near = np.array([1.000001, np.nan, np.inf, np.inf, 0.0, 100.001, -0.0], NP_DTYPES[dtype])
        out.append(Sample((T(values), T(near)), name="edges"))
        for kwargs in ({"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}, {"rtol": 1e-2, "atol": 1e-3}):
            out.append(Sample((T(values), T(near)), kwargs, f"edges {kwargs}"))
    elif dtype != "bool":
        lo = 0 if dtype == "uint8" else -5
        x = np.array([lo, 2, 3, 100], NP_DTYPES[dtype])
        y = np.array([lo + 1, 1, 3, 99], NP_DTYPES[dtype])
        out.append(Sample((T(x), T(y)), {"atol": 1}, "atol 1"))
        out.append(Sample((T(x), T(y)), {"rtol": 0.02}, "rtol"))
    return out


def _errors() -> list[ErrorSample]:
    one = T(np.ones(2, np.float32))
    return [
        ErrorSample(Sample((one, T(np.ones(2, np.float64)))), RuntimeError, "Float did not match Double"),
        ErrorSample(Sample((one, one), {"rtol": -1.0}), RuntimeError, "rtol must be greater than or equal to zero"),
        ErrorSample(Sample((one, one), {"atol": -1.0}), RuntimeError, "atol must be greater than or equal to zero"),
    ]


def _equal_samples(dtype: str, rng) -> list[Sample]:
    out = _pairs(dtype, rng)[:2] + _pairs(dtype, rng)[3:4]
    out.append(Sample((make((3,), dtype, rng), make((3,), "float64", rng)), name="dtypes differ"))
    if dtype in FLOATS:
        out.append(Sample((T(np.array([np.nan], NP_DTYPES[dtype])),) * 2, name="nan"))
    return out


def _shapes_differ(dtype: str, rng) -> list[Sample]:
    # Decided by the shapes alone: False without reading a value (so fake tensors answer it too).
    return [Sample((make((3,), dtype, rng), make((4,), dtype, rng)), name="shapes differ")]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _method(name):
    return lambda lib, self, *a, **k: getattr(self, name)(*a, **k)


# allclose and equal read values into a Python bool: no meta result (PyTorch's raise on meta tensors
# too), and no gradient or vmap.
_BOOL = {"meta": False, "transforms": False}

OPS = [
    OpInfo("isclose", _call("isclose"), ALL_REAL, _pairs, _errors),
    OpInfo("Tensor.isclose", _method("isclose"), ("float32",), _pairs),
    OpInfo("allclose", _call("allclose"), ALL_REAL, _pairs, _errors, **_BOOL),
    OpInfo("Tensor.allclose", _method("allclose"), ("float32",), _pairs, **_BOOL),
    OpInfo("equal", _call("equal"), ALL_REAL, _equal_samples, **_BOOL),
    OpInfo("Tensor.equal", _method("equal"), ("float32", "int64"), _equal_samples, **_BOOL),
    OpInfo("equal_shapes_differ", _call("equal"), ("float32", "int64"), _shapes_differ, **_BOOL),
]
