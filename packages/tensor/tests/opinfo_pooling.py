"""Samples for the 2-D pools (``ember.core.aten.nn.pooling``): max_pool2d with and without indices (ties,
NaN, padding, dilation, ceil_mode), avg_pool2d (ceil_mode, count_include_pad, divisor_override) and
adaptive_avg_pool2d (PyTorch's overlapping windows, None sizes), batched and unbatched, channels-last."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make


def _inputs(shape: tuple, dtype: str, rng, **kw) -> list:
    """Every layout for the main float dtypes; contiguous only for the others (the kernels do not care)."""
    if dtype in ("float32", "float64"):
        return layouts_of(shape, dtype, rng, **kw)
    return [make(shape, dtype, rng, **kw)]


MAX_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (2, 3)},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 2, "stride": 3, "ceil_mode": True, "padding": 1},
    {"kernel_size": (1, 3), "stride": 1},
]
AVG_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": (2, 3), "divisor_override": 3},
    {"kernel_size": 2, "stride": (1, 2)},
]
ADAPTIVE_SIZES = [3, (4, 5), (7, 6), (1, 1), (None, 3), (10, 11), (0, 2)]


def _window_samples(cases, shapes=((2, 3, 7, 6), (3, 5, 5))):
    def samples(dtype: str, rng) -> list[Sample]:
        out = []
        for kwargs in cases:
            for shape in shapes:
                for x in _inputs(shape, dtype, rng):
                    out.append(Sample((x,), dict(kwargs), f"{x} {kwargs}"))
        out.append(Sample((make((0, 2, 4, 4), dtype, rng),), {"kernel_size": 2}, "empty batch"))
        return out

    return samples


def _ties_samples(dtype: str, rng) -> list[Sample]:
    # Small integers give ties inside windows; the first maximum's index is PyTorch's.
    x = T(rng.integers(0, 3, size=(1, 2, 6, 6)).astype(np.float32))
    nan = np.ones((1, 1, 4, 4), np.float32)
    nan[0, 0, 1, 1] = nan[0, 0, 0, 1] = np.nan
    # Windows mixing infinities and NaN: the last NaN wins, -inf alone keeps the first tap.
    mixed = np.array([[-np.inf, np.nan, 1, -np.inf], [np.inf, np.nan, -np.inf, -np.inf]] * 2, np.float32)
    return [
        Sample((x,), {"kernel_size": 3, "stride": 1, "padding": 1}, "ties"),
        Sample((x,), {"kernel_size": 3, "stride": 1}, "ties, no padding"),
        Sample((x,), {"kernel_size": 2}, "ties, 2x2"),
        Sample((x,), {"kernel_size": 5, "stride": 1}, "ties, 25 taps"),
        Sample((T(nan),), {"kernel_size": 2}, "NaN"),
        Sample((T(mixed.reshape(1, 1, 4, 4)),), {"kernel_size": 2}, "infinities and NaN"),
        Sample((T(np.full((1, 1, 3, 3), -np.inf, np.float32)),), {"kernel_size": 2, "padding": 1}, "all -inf"),
        Sample((T(np.full((1, 1, 4, 4), -np.inf, np.float32)),), {"kernel_size": 2}, "all -inf, no padding"),
    ]


def _adaptive_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for size in ADAPTIVE_SIZES:
        for x in _inputs((2, 3, 7, 6), dtype, rng):
            out.append(Sample((x, size), name=f"{x} -> {size}"))
        out.append(Sample((make((3, 5, 4), dtype, rng), size), name=f"unbatched -> {size}"))
    return out


def _channels_last_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((make((2, 6, 5, 3), dtype, rng),), name="NHWC")]


def _ones(*shape) -> T:
    return T(np.ones(shape, np.float32))


def _max_errors() -> list[ErrorSample]:
    x = _ones(2, 3, 5, 5)
    return [
        ErrorSample(Sample((x, 2), {"stride": 0}), RuntimeError, "stride should not be zero"),
        ErrorSample(Sample((x, 2), {"dilation": 0}), RuntimeError, "dilation should be greater than zero"),
        ErrorSample(Sample((x, 2), {"padding": 2}), RuntimeError, "pad should be at most half"),
        ErrorSample(Sample((x, 3), {"padding": 2, "dilation": 2}), RuntimeError, "pad should be smaller than"),
        ErrorSample(Sample((_ones(5, 5), 2)), RuntimeError, "3D or 4D"),
        ErrorSample(Sample((_ones(1, 0, 5, 5), 2)), RuntimeError, "optional 0 dim batch size"),
        ErrorSample(Sample((x, 6)), RuntimeError, "Output size is too small"),
        ErrorSample(Sample((x, (1, 2, 3))), RuntimeError, "kernel_size must either be a single int"),
        ErrorSample(Sample((x, 2), {"stride": (1, 2, 3)}), RuntimeError, "stride must either be omitted"),
        ErrorSample(Sample((T(np.ones((1, 1, 4, 4), bool)), 2)), NotImplementedError, "max_pool2d"),
    ]


def _avg_errors() -> list[ErrorSample]:
    x = _ones(2, 3, 5, 5)
    return [
        ErrorSample(Sample((x, 2), {"padding": 2}), RuntimeError, "pad should be at most half"),
        ErrorSample(Sample((x, 6)), RuntimeError, "Output size is too small"),
        ErrorSample(Sample((x, 2), {"divisor_override": 0}), RuntimeError, "divisor must be not zero"),
        ErrorSample(Sample((_ones(5, 5), 2)), IndexError, "Dimension out of range"),
        ErrorSample(Sample((T(np.ones((1, 1, 4, 4), np.int32)), 2)), NotImplementedError, "avg_pool2d"),
    ]


def _adaptive_errors() -> list[ErrorSample]:
    x = _ones(2, 3, 5, 5)
    return [
        ErrorSample(Sample((x, (1, 2, 3))), RuntimeError, "output_size must be 2"),
        ErrorSample(Sample((_ones(5, 5), 2)), RuntimeError, "Expected 3D or 4D tensor"),
        ErrorSample(Sample((x, -1)), RuntimeError, "greater than or equal to 0"),
        ErrorSample(Sample((T(np.ones((1, 1, 4, 4), np.int64)), 2)), NotImplementedError, "adaptive_avg_pool2d"),
    ]


def _fn(name, **fixed):
    return lambda lib, *a, **k: getattr(functional(lib), name)(*a, **k, **fixed)


def _nhwc(name, **fixed):
    return lambda lib, x, **k: getattr(functional(lib), name)(x.permute(0, 3, 1, 2), **fixed, **k)


OPS = [
    OpInfo("nn.functional.max_pool2d", _fn("max_pool2d"), ALL, _window_samples(MAX_CASES), _max_errors),
    OpInfo(
        "nn.functional.max_pool2d_with_indices",
        _fn("max_pool2d", return_indices=True),
        ("float32", "float16", "int64", "uint8"),
        _window_samples(MAX_CASES),
    ),
    OpInfo("nn.functional.max_pool2d_ties", _fn("max_pool2d", return_indices=True), ("float32",), _ties_samples),
    OpInfo("max_pool2d", lambda lib, *a, **k: lib.max_pool2d(*a, **k), ("float32",), _window_samples(MAX_CASES[:3])),
    OpInfo("nn.functional.avg_pool2d", _fn("avg_pool2d"), ALL, _window_samples(AVG_CASES), _avg_errors),
    OpInfo("nn.functional.adaptive_avg_pool2d", _fn("adaptive_avg_pool2d"), ALL, _adaptive_samples, _adaptive_errors),
    OpInfo(
        "nn.functional.pools_channels_last",
        lambda lib, x: [
            functional(lib).max_pool2d(x.permute(0, 3, 1, 2), 2, return_indices=True),
            functional(lib).avg_pool2d(x.permute(0, 3, 1, 2), 3, padding=1),
            functional(lib).adaptive_avg_pool2d(x.permute(0, 3, 1, 2), (3, 2)),
        ],
        ("float32", "float64"),
        _channels_last_samples,
    ),
]
