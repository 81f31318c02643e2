"""Samples for the mask and nonzero ops (``ember.core.aten.indexing.masking``, ``unique``): masked_fill,
masked_scatter, masked_select, nonzero (and as_tuple), argwhere, where(condition), unique (with
inverse, counts and dim) and unique_consecutive.

Masks broadcast against ``self``; the data-dependent ops (masked_select, nonzero, unique) have no
meta check here since their meta kernels raise, as PyTorch's do (tested in test_advanced_indexing).
"""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ALL_REAL, FLOATS, ErrorSample, OpInfo, Sample, T, layouts_of, make


def _mask(shape, rng, layout="contiguous"):
    return make(shape, "bool", rng, layout=layout)


def masked_fill_samples(dtype, rng):
    out = []
    value = True if dtype == "bool" else 2
    for a in layouts_of((3, 4), dtype, rng):
        out.append(Sample((a, _mask((3, 4), rng, "transposed"), value), name=f"{a}"))
        out.append(Sample((a, _mask((4,), rng), T(np.array(value, np.float64))), name=f"{a} 0-dim value"))
    out.append(Sample((make((4,), dtype, rng), _mask((2, 4), rng), value), name="self broadcasts"))
    if dtype in FLOATS:
        out.append(Sample((make((3,), dtype, rng), _mask((3,), rng), float("nan")), name="nan"))
    return out


def masked_fill_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, T(np.ones((3, 4), np.uint8)), 1.0)), RuntimeError, "boolean masks"),
        ErrorSample(
            Sample((x, T(np.ones((3, 4), np.bool_)), T(np.ones(2, np.float32)))), RuntimeError, "0-dimensional"
        ),
        ErrorSample(Sample((T(np.ones(3, np.uint8)), T(np.ones(3, np.bool_)), 300)), RuntimeError, "overflow"),
    ]


def masked_scatter_samples(dtype, rng):
    out = []
    for a in layouts_of((3, 4), dtype, rng):
        out.append(Sample((a, _mask((3, 4), rng), make((13,), dtype, rng)), name=f"{a}"))
        out.append(Sample((a, _mask((4,), rng), make((3, 5), dtype, rng)), name=f"{a} mask broadcasts"))
    out.append(Sample((make((4,), dtype, rng), _mask((2, 4), rng), make((8,), dtype, rng)), name="self broadcasts"))
    return out


def masked_scatter_errors():
    x = T(np.arange(12, dtype=np.float32).reshape(3, 4))
    mask = T(np.ones((3, 4), np.bool_))
    return [
        ErrorSample(Sample((x, mask, T(np.ones(3, np.float32)))), RuntimeError, "Number of elements of source"),
        ErrorSample(Sample((x, mask, T(np.ones(20, np.float64)))), RuntimeError, "same dtypes"),
    ]


def masked_select_samples(dtype, rng):
    out = []
    for a in layouts_of((3, 4), dtype, rng):
        out.append(Sample((a, _mask((3, 4), rng, "transposed")), name=f"{a}"))
    out.append(Sample((make((4,), dtype, rng), _mask((2, 4), rng)), name="broadcast"))
    out.append(Sample((make((), dtype, rng), T(np.array(True))), name="0-dim"))
    return out


def masked_select_errors():
    x = T(np.ones((3, 4), np.float32))
    return [ErrorSample(Sample((x, T(np.ones((3, 4), np.uint8)))), RuntimeError, "BoolTensor")]


def nonzero_samples(dtype, rng):
    out = [Sample((a,), name=f"{a}") for a in layouts_of((3, 4), dtype, rng, low=-1, high=2)]
    out.append(Sample((make((2, 3, 2), dtype, rng, low=0, high=2),), name="3d"))
    out.append(Sample((make((), dtype, rng, low=1, high=2),), name="0-dim nonzero"))
    out.append(Sample((T(np.zeros((), np.float32).astype(make((), dtype, rng).array.dtype)),), name="0-dim zero"))
    out.append(Sample((make((0, 3), dtype, rng),), name="empty"))
    return out


def unique_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng, low=-3, high=3):
        for kwargs in (
            {},
            {"return_inverse": True},
            {"return_counts": True},
            {"return_inverse": True, "return_counts": True},
        ):
            out.append(Sample((a,), kwargs, name=f"{a} {kwargs}"))
    rows = np.array([[1, 2, 0], [0, 1, 1], [1, 2, 0], [0, 1, 0]]).astype(make((), dtype, rng).array.dtype)
    out.append(Sample((T(rows),), {"dim": 0, "return_inverse": True, "return_counts": True}, name="dim 0"))
    out.append(Sample((T(rows),), {"dim": 1, "return_counts": True}, name="dim 1"))
    out.append(Sample((make((0,), dtype, rng),), {"return_counts": True}, name="empty"))
    if dtype in FLOATS:
        nans = np.array([3.0, np.nan, 1.0, np.nan, 3.0], make((), dtype, rng).array.dtype)
        out.append(Sample((T(nans),), {"return_counts": True, "return_inverse": True}, name="nans"))
    return out


def unique_consecutive_samples(dtype, rng):
    out = []
    runs = np.array([[1, 1, 0, 0, 2], [2, 2, 2, 1, 1], [1, 1, 0, 0, 2]]).astype(make((), dtype, rng).array.dtype)
    for a in (T(runs), T(runs, "transposed"), T(runs, "sliced")):
        out.append(Sample((a,), {"return_inverse": True, "return_counts": True}, name=f"{a}"))
        out.append(Sample((a,), {"dim": 0, "return_inverse": True, "return_counts": True}, name=f"{a} dim 0"))
        out.append(Sample((a,), {"dim": 1, "return_counts": True}, name=f"{a} dim 1"))
    out.append(Sample((make((0,), dtype, rng),), name="empty"))
    return out


def nonzero_static_errors():
    return [ErrorSample(Sample((T(np.ones(3, np.float32)),)), RuntimeError, "non-negative")]


def unique_errors():
    return [ErrorSample(Sample((T(np.ones(3, np.complex64)),)), NotImplementedError, "ComplexFloat")]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _inplace(name):
    return lambda lib, self, *a, **k: getattr(self, name + "_")(*a, **k)


OPS = [
    OpInfo(
        "masked_fill",
        _call("masked_fill"),
        ALL,
        masked_fill_samples,
        errors=masked_fill_errors,
        inplace=_inplace("masked_fill"),
    ),
    OpInfo("masked_scatter", _call("masked_scatter"), ALL, masked_scatter_samples, errors=masked_scatter_errors),
    OpInfo(
        "masked_scatter_",
        lambda lib, s, m, src: s.clone().masked_scatter_(m.expand(s.shape), src),
        ALL,
        lambda dtype, rng: masked_scatter_samples(dtype, rng)[:-1],
    ),
    OpInfo(
        "masked_select",
        _call("masked_select"),
        ALL,
        masked_select_samples,
        errors=masked_select_errors,
        out=True,
        meta=False,
    ),
    OpInfo("nonzero", _call("nonzero"), ALL, nonzero_samples, out=True, meta=False),
    OpInfo("nonzero_as_tuple", lambda lib, a: lib.nonzero(a, as_tuple=True), ALL, nonzero_samples, meta=False),
    OpInfo("argwhere", _call("argwhere"), ALL, nonzero_samples, meta=False),
    OpInfo("nonzero_static", lambda lib, a, size=5: lib.nonzero_static(a, size=size), ALL, nonzero_samples),
    OpInfo(
        "nonzero_static_errors",
        lambda lib, a: lib.nonzero_static(a, size=-1),
        ("float32",),
        lambda dtype, rng: [],
        errors=nonzero_static_errors,
    ),
    OpInfo(
        "nonzero_static_fill",
        lambda lib, a: a.nonzero_static(size=2, fill_value=7),
        ("float32", "bool"),
        nonzero_samples,
    ),
    OpInfo(
        "where_condition", lambda lib, a: lib.where(a != 0), ("float32", "int64", "bool"), nonzero_samples, meta=False
    ),
    OpInfo("unique", _call("unique"), ALL_REAL, unique_samples, errors=unique_errors, meta=False),
    OpInfo("unique_consecutive", _call("unique_consecutive"), ALL_REAL, unique_consecutive_samples, meta=False),
]
