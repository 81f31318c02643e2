"""Samples for the convolutions (``ember.core.aten.nn.convolution``): conv1d, conv2d (stride, padding
including "same" and "valid", dilation, groups, bias, unbatched input, channels-last input) and
conv_transpose2d (stride, padding, output_padding, groups, dilation), with PyTorch's errors."""

from __future__ import annotations

import numpy as np
from opinfo import (
    ALL,
    FLOATS,
    ErrorSample,
    OpInfo,
    Sample,
    T,
    functional,
    layouts_of,
    make,
    rounded_float64_reference,
)


def _inputs(shape: tuple, dtype: str, rng, **kw) -> list:
    """Every layout for the main float dtypes; contiguous only for the others (the kernels do not care)."""
    if dtype in ("float32", "float64"):
        return layouts_of(shape, dtype, rng, **kw)
    return [make(shape, dtype, rng, **kw)]


CONV2D = [
    ({}, (2, 4, 7, 6), (6, 4, 3, 3)),
    ({"stride": 2}, (2, 4, 7, 6), (6, 4, 3, 2)),
    ({"padding": 1}, (1, 3, 5, 5), (2, 3, 3, 3)),
    ({"padding": (2, 0), "dilation": (2, 1)}, (2, 2, 6, 7), (3, 2, 3, 2)),
    ({"stride": (2, 1), "padding": 1, "dilation": 2}, (1, 4, 8, 6), (4, 4, 2, 3)),
    ({"groups": 2}, (2, 4, 5, 5), (6, 2, 3, 3)),
    ({"groups": 4, "padding": 1}, (1, 4, 5, 4), (4, 1, 3, 3)),
    ({"padding": "same"}, (2, 3, 5, 6), (4, 3, 3, 3)),
    ({"padding": "same"}, (2, 3, 5, 6), (4, 3, 2, 4)),
    ({"padding": "same", "dilation": 2}, (1, 2, 6, 6), (3, 2, 3, 2)),
    ({"padding": "valid"}, (2, 3, 5, 6), (4, 3, 3, 2)),
    ({}, (3, 5, 5), (2, 3, 2, 2)),
    ({"stride": 3, "padding": 2}, (1, 2, 4, 4), (2, 2, 1, 1)),
    ({}, (0, 3, 5, 5), (2, 3, 3, 3)),
    ({"padding": 1}, (2, 3, 1, 1), (2, 3, 3, 3)),
    ({"padding": (3, 2)}, (2, 2, 4, 5), (3, 2, 2, 2)),  # padding past the kernel's reach: more outputs than pixels
]

CONV1D = [
    ({}, (2, 4, 9), (6, 4, 3)),
    ({"stride": 2, "padding": 1}, (2, 4, 9), (6, 4, 3)),
    ({"dilation": 2, "groups": 2}, (1, 4, 9), (2, 2, 3)),
    ({"padding": "same"}, (2, 3, 8), (4, 3, 4)),
    ({}, (3, 7), (2, 3, 2)),
]

TRANSPOSE2D = [
    ({}, (2, 4, 4, 5), (4, 3, 3, 3)),
    ({"stride": 2}, (2, 4, 4, 5), (4, 3, 3, 2)),
    ({"stride": 2, "padding": 1, "output_padding": 1}, (1, 4, 4, 4), (4, 2, 3, 3)),
    ({"stride": (2, 3), "padding": (1, 2), "dilation": (2, 1), "output_padding": (1, 2)}, (1, 2, 3, 4), (2, 3, 3, 3)),
    ({"groups": 2}, (2, 4, 3, 3), (4, 3, 2, 2)),
    ({"dilation": 2, "output_padding": 1}, (1, 2, 3, 3), (2, 2, 2, 2)),
    ({}, (2, 3, 3), (2, 3, 2, 2)),
]


def _samples(cases, transposed: bool = False):
    def samples(dtype: str, rng) -> list[Sample]:
        out = []
        for kwargs, x_shape, w_shape in cases:
            w = make(w_shape, dtype, rng, low=-2, high=3)
            for x in _inputs(x_shape, dtype, rng, low=-2, high=3):
                out.append(Sample((x, w), dict(kwargs), f"{x} * {w} {kwargs}"))
            x = make(x_shape, dtype, rng, low=-2, high=3)
            channels = w_shape[1] * kwargs.get("groups", 1) if transposed else w_shape[0]
            b = make((channels,), dtype, rng, low=-2, high=3)
            out.append(Sample((x, w, b), dict(kwargs), f"{x} * {w} + bias {kwargs}"))
            out.append(Sample((x, make(w_shape, dtype, rng, layout="transposed"), b), dict(kwargs), "w transposed"))
        return out

    return samples


def _channels_last_samples(dtype: str, rng) -> list[Sample]:
    x = make((2, 5, 6, 3), dtype, rng, low=-2, high=3)  # NHWC, permuted to NCHW in the call
    w = make((4, 3, 3, 3), dtype, rng, low=-2, high=3)
    return [Sample((x, w), {"padding": 1}, "channels-last input"), Sample((x, w), {"stride": 2}, "stride 2")]


def _conv2d_nhwc(lib, x, w, **kwargs):
    return functional(lib).conv2d(x.permute(0, 3, 1, 2), w, **kwargs)


def _ones(*shape, dtype=np.float32) -> T:
    return T(np.ones(shape, dtype))


def _conv2d_errors() -> list[ErrorSample]:
    x, w = _ones(2, 3, 8, 8), _ones(4, 3, 3, 3)
    return [
        ErrorSample(Sample((_ones(3, 8), w)), RuntimeError, r"Expected 3D \(unbatched\) or 4D \(batched\) input"),
        ErrorSample(Sample((_ones(1, 5, 8, 8), w)), RuntimeError, "to have 3 channels, but got 5 channels"),
        ErrorSample(Sample((x, w), {"groups": 2}), RuntimeError, "to have 6 channels"),
        ErrorSample(Sample((x, _ones(4, 1, 3, 3)), {"groups": 3}), RuntimeError, "divisible by 3 at dimension 0"),
        ErrorSample(Sample((x, w), {"groups": 0}), RuntimeError, "non-positive groups"),
        ErrorSample(
            Sample((_ones(1, 3, 2, 2), w)), RuntimeError, "Kernel size can't be greater than actual input size"
        ),
        ErrorSample(Sample((x, w), {"stride": 0}), RuntimeError, "non-positive stride"),
        ErrorSample(Sample((x, w), {"padding": -1}), RuntimeError, "negative padding"),
        ErrorSample(Sample((x, w), {"dilation": 0}), RuntimeError, "non-positive dilation"),
        ErrorSample(Sample((x, w, _ones(5))), RuntimeError, "expected bias to be 1-dimensional with 4 elements"),
        ErrorSample(Sample((x, w, _ones(4, dtype=np.float64))), RuntimeError, r"bias type \(double\)"),
        ErrorSample(Sample((_ones(2, 3, 8, 8, dtype=np.float64), w)), RuntimeError, "expected scalar type Double"),
        ErrorSample(Sample((x, w), {"padding": "same", "stride": 2}), RuntimeError, "not supported for strided"),
        ErrorSample(Sample((x, w), {"padding": "foo"}), RuntimeError, "Invalid padding string: 'foo'"),
        ErrorSample(Sample((x, w), {"padding": (1, 2, 3)}), RuntimeError, "expected padding to be a single integer"),
        ErrorSample(Sample((x, _ones(0, 3, 3, 3))), RuntimeError, "expected weight to be at least 1"),
        ErrorSample(Sample((T(np.ones((1, 3, 4, 4), bool)), T(np.ones((2, 3, 3, 3), bool)))), NotImplementedError),
    ]


def _transpose_errors() -> list[ErrorSample]:
    x = _ones(2, 3, 8, 8)
    return [
        ErrorSample(Sample((x, _ones(3, 4, 3, 3)), {"stride": 2, "output_padding": 2}), RuntimeError, "output padding"),
        ErrorSample(Sample((x, _ones(4, 4, 3, 3))), RuntimeError, "Given transposed=1"),
        ErrorSample(Sample((x, _ones(3, 4, 3, 3)), {"groups": 2}), RuntimeError, "divisible by 2"),
        ErrorSample(Sample((_ones(1, 3, 1, 1), _ones(3, 4, 3, 3)), {"padding": 3}), RuntimeError, "too small"),
        ErrorSample(Sample((x, _ones(3, 4, 3, 3), _ones(5))), RuntimeError, "with 4 elements"),
        ErrorSample(
            Sample((T(np.ones((1, 3, 4, 4), np.int32)), T(np.ones((3, 2, 3, 3), np.int32)))), NotImplementedError
        ),
    ]


def _conv1d_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(2, 3, 5, 5), _ones(4, 3, 1))), RuntimeError, r"Expected 2D \(unbatched\) or 3D"),
        ErrorSample(Sample((_ones(2, 3), _ones(4, 3, 1))), RuntimeError, "to have 3 channels, but got 2 channels"),
    ]


# float16 and bfloat16 compare with PyTorch's float64 result rounded once (rounded_float64_reference):
# PyTorch's own half-precision convolutions round partial sums, by amounts that differ between CPUs.
# Ember accumulates in float32 and rounds once, so one ulp of the result, plus float32's error near 0.
TOLERANCES = {"float16": (1e-3, 1e-3), "bfloat16": (8e-3, 1e-3), "complex64": (1e-5, 1e-4), "float32": (1e-5, 1e-4)}


def _fn(name):
    return lambda lib, *a, **k: getattr(functional(lib), name)(*a, **k)


def _conv(name: str, samples, errors=None, dtypes=ALL) -> OpInfo:
    call = _fn(name)
    return OpInfo(
        f"nn.functional.{name}",
        call,
        dtypes,
        samples,
        errors or (lambda: []),
        tolerances=TOLERANCES,
        oracle_fix=rounded_float64_reference(call),
    )


OPS = [
    _conv("conv2d", _samples(CONV2D), _conv2d_errors),
    OpInfo("conv2d", lambda lib, *a, **k: lib.conv2d(*a, **k), ("float32",), _samples(CONV2D[:8])),
    OpInfo(
        "nn.functional.conv2d_channels_last",
        _conv2d_nhwc,
        FLOATS,
        _channels_last_samples,
        tolerances=TOLERANCES,
        oracle_fix=rounded_float64_reference(_conv2d_nhwc),
    ),
    _conv("conv1d", _samples(CONV1D), _conv1d_errors),
    _conv("conv_transpose2d", _samples(TRANSPOSE2D, transposed=True), _transpose_errors),
]
