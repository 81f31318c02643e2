"""Samples for ``nn.functional.pad`` and ``constant_pad_nd`` (``ember.core.aten.nn.padding``): constant
(negative pads crop, values cast to the dtype), reflect and replicate in 1, 2 and 3 dims, batched and
unbatched, channels-last inputs, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make


def _inputs(shape: tuple, dtype: str, rng, **kw) -> list:
    """Every layout for the main float dtypes; contiguous only for the others (the kernels do not care)."""
    if dtype in ("float32", "float64"):
        return layouts_of(shape, dtype, rng, **kw)
    return [make(shape, dtype, rng, **kw)]


CASES = [
    ((2, 3, 4, 5), (1, 2), "constant", None),
    ((2, 3, 4, 5), (1, 2, 0, 3), "constant", 1.5),
    ((2, 3, 4, 5), (-1, 2, 1, -2), "constant", 2),
    ((3, 4), (0, 0, 2, 1), "constant", -1),
    ((3,), (2, 2), "constant", True),
    ((2, 3, 4, 5), (1, 2, 0, 0, 1, 1, 1, 0), "constant", None),
    ((2, 3, 4, 5), (1, 2, 3, 1), "reflect", None),
    ((3, 4, 5), (2, 1, 0, 3), "reflect", None),
    ((2, 5), (3, 4), "reflect", None),
    ((2, 3, 5), (-1, 2), "reflect", None),
    ((2, 3, 4, 5), (1, 2, 3, 1), "replicate", None),
    ((3, 4, 5), (4, 1, 0, 6), "replicate", None),
    ((2, 5), (3, 4), "replicate", None),
    ((2, 3, 5), (-2, 1), "replicate", None),
    ((1, 2, 3, 4, 3), (1, 1, 2, 0, 1, 2), "reflect", None),
    ((2, 3, 4, 3), (1, 1, 2, 0, 1, 2), "replicate", None),
    ((0, 3, 4), (1, 2), "replicate", None),
    ((1, 2, 3, 4), (1, 2, 3, 1), "circular", None),
    ((2, 3, 4), (3, -1), "circular", None),
    ((2, 3, 5), (-2, 2), "circular", None),
    ((2, 3, 4, 5), (1, 1, 1, 1, 1, 1), "circular", None),
]


def _samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape, pad, mode, value in CASES:
        kwargs = {"mode": mode} if value is None else {"mode": mode, "value": value}
        for x in _inputs(shape, dtype, rng):
            out.append(Sample((x, pad), kwargs, f"{x} {pad} {kwargs}"))
    return out


def _channels_last_samples(dtype: str, rng) -> list[Sample]:
    x = make((2, 4, 5, 3), dtype, rng)  # NHWC, permuted to NCHW in the call
    return [Sample((x, (1, 2, 2, 1)), {"mode": mode}, mode) for mode in ("constant", "reflect", "replicate")]


def _pad_nhwc(lib, x, pad, **kwargs):
    return functional(lib).pad(x.permute(0, 3, 1, 2), pad, **kwargs)


def _ones(*shape) -> T:
    return T(np.ones(shape, np.float32))


def _errors() -> list[ErrorSample]:
    x = _ones(1, 1, 3, 3)
    return [
        ErrorSample(Sample((x, (3, 3, 1, 1)), {"mode": "reflect"}), RuntimeError, "Padding size should be less than"),
        ErrorSample(Sample((x, (1, 1)), {"mode": "reflect"}), NotImplementedError, "Padding size 2 is not supported"),
        ErrorSample(Sample((x, (1, 1, 1))), RuntimeError, "divisible by 2"),
        ErrorSample(Sample((x, (1, 1) * 5)), RuntimeError, "two times the input dimension"),
        ErrorSample(Sample((x, (1, 1)), {"mode": "reflect", "value": 2.0}), RuntimeError, "doesn't take in value"),
        ErrorSample(Sample((x, (1, 1)), {"mode": "foo"}), NotImplementedError, "Unrecognised padding mode foo"),
        ErrorSample(Sample((x, (-2, -2))), RuntimeError),
        ErrorSample(Sample((x, (5, 0, 0, 0)), {"mode": "circular"}), RuntimeError, "wrapping around more than once"),
        ErrorSample(
            Sample((_ones(1, 0, 3, 3), (1, 1, 1, 1)), {"mode": "reflect"}), RuntimeError, "non-zero dimensions"
        ),
        ErrorSample(Sample((x, (1.5, 1))), TypeError, "must be tuple of ints"),
        ErrorSample(Sample((T(np.ones((1, 3, 3), bool)), (1, 1)), {"mode": "replicate"}), NotImplementedError),
    ]


def _constant_pad_nd(lib, x, pad, value=0):
    return lib.constant_pad_nd(x, pad, value)


def _constant_samples(dtype: str, rng) -> list[Sample]:
    x = make((2, 3, 4), dtype, rng)
    return [Sample((x, [1, 2]), {"value": 3}), Sample((x, [-1, 0, 2, 1]), {}), Sample((x, [0, 0, 0, 0, 1, 1]), {})]


OPS = [
    OpInfo("nn.functional.pad", lambda lib, *a, **k: functional(lib).pad(*a, **k), ALL, _samples, _errors),
    OpInfo("nn.functional.pad_channels_last", _pad_nhwc, ("float32", "int64"), _channels_last_samples),
    OpInfo("constant_pad_nd", _constant_pad_nd, ("float32", "int32", "bool"), _constant_samples),
]
