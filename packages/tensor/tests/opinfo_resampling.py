"""Samples for ``nn.functional.interpolate`` (``ember.core.aten.nn.resampling``): nearest (3-D and 4-D,
by size and by scale factor, with and without recompute_scale_factor), nearest-exact, bilinear with
align_corners True and False, area, channels-last inputs, and the errors of PyTorch's Python wrapper."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make


def _inputs(shape: tuple, dtype: str, rng, **kw) -> list:
    """Every layout for the main float dtypes; contiguous only for the others (the kernels do not care)."""
    if dtype in ("float32", "float64"):
        return layouts_of(shape, dtype, rng, **kw)
    return [make(shape, dtype, rng, **kw)]


CASES_4D = [
    {"scale_factor": 2},
    {"size": (5, 13)},
    {"size": 3},
    {"scale_factor": 1.7},
    {"scale_factor": (0.6, 2.3)},
    {"scale_factor": (0.6, 2.3), "recompute_scale_factor": True},
    {"scale_factor": 2, "mode": "bilinear"},
    {"size": (5, 13), "mode": "bilinear"},
    {"size": (5, 13), "mode": "bilinear", "align_corners": True},
    {"size": (1, 1), "mode": "bilinear", "align_corners": True},
    {"scale_factor": 1.7, "mode": "bilinear"},
    {"scale_factor": (0.6, 2.3), "mode": "bilinear", "recompute_scale_factor": True},
    {"size": (3, 2), "mode": "bilinear"},
    {"size": (4, 4), "mode": "area"},
    {"scale_factor": 0.5, "mode": "area"},
    {"size": (5, 13), "mode": "nearest-exact"},
    {"scale_factor": 1.5, "mode": "nearest-exact"},
]
CASES_3D = [{"scale_factor": 2}, {"size": 11}, {"scale_factor": 1.7}, {"size": 4, "mode": "nearest-exact"}]


def _samples(dtype: str, rng) -> list[Sample]:
    out = []
    for kwargs in CASES_4D:
        if dtype == "uint8" and kwargs.get("size") == (1, 1):
            continue  # PyTorch's uint8 kernel fails an internal assert on a 1x1 output
        for x in _inputs((2, 3, 7, 6), dtype, rng):
            out.append(Sample((x,), dict(kwargs), f"{x} {kwargs}"))
    for kwargs in CASES_3D:
        for x in _inputs((2, 3, 7), dtype, rng):
            out.append(Sample((x,), dict(kwargs), f"{x} {kwargs}"))
    return out


def _channels_last_samples(dtype: str, rng) -> list[Sample]:
    x = make((2, 5, 4, 3), dtype, rng)
    return [Sample((x,), kwargs, str(kwargs)) for kwargs in CASES_4D[:3] + CASES_4D[6:9]]


def _interpolate_nhwc(lib, x, **kwargs):
    return functional(lib).interpolate(x.permute(0, 3, 1, 2), **kwargs)


def _ones(*shape) -> T:
    return T(np.ones(shape, np.float32))


def _errors() -> list[ErrorSample]:
    x = _ones(2, 3, 5, 5)
    return [
        ErrorSample(Sample((x,), {"size": 4, "scale_factor": 2}), ValueError, "only one of size or scale_factor"),
        ErrorSample(Sample((x,)), ValueError, "either size or scale_factor"),
        ErrorSample(Sample((x,), {"size": (1, 2, 3)}), ValueError, "same number of spatial dimensions"),
        ErrorSample(Sample((x,), {"scale_factor": (1.0, 2.0, 3.0)}), ValueError, "same number of spatial dimensions"),
        ErrorSample(Sample((x,), {"size": 4, "align_corners": True}), ValueError, "align_corners option"),
        ErrorSample(Sample((x,), {"size": 4, "recompute_scale_factor": True}), ValueError, "not meaningful"),
        ErrorSample(Sample((_ones(3, 5, 5),), {"size": 4, "mode": "bilinear"}), NotImplementedError, "needs 4D input"),
        ErrorSample(Sample((x,), {"size": 4, "mode": "foo"}), NotImplementedError, "got foo"),
        ErrorSample(Sample((_ones(5, 5),), {"size": 4}), NotImplementedError, r"got 2D"),
        ErrorSample(Sample((x,), {"size": 0}), RuntimeError, "should be greater than 0"),
        ErrorSample(Sample((x,), {"scale_factor": -1.0}), RuntimeError, "should be greater than 0"),
        ErrorSample(Sample((T(np.ones((1, 1, 2, 2), np.int32)),), {"size": 4}), NotImplementedError),
    ]


OPS = [
    OpInfo(
        "nn.functional.interpolate",
        lambda lib, *a, **k: functional(lib).interpolate(*a, **k),
        ALL,
        _samples,
        _errors,
        tolerances={"float32": (1e-5, 1e-5), "bfloat16": (1.6e-2, 2e-2)},
    ),
    OpInfo("nn.functional.interpolate_channels_last", _interpolate_nhwc, ("float32", "uint8"), _channels_last_samples),
]
