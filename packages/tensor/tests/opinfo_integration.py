"""Samples for the trapezoidal rule (``ember.core.aten.reductions.integration``): ``trapezoid``,
``trapz`` and ``cumulative_trapezoid`` with a constant spacing, with sample points (1-D along ``dim``
and full-shape), along each dim, on empty sizes and integer ``y``."""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, ErrorSample, OpInfo, Sample, T, layouts_of, make

DTYPES = (*FLOATS, "int64", "int32")


def _samples(dtype: str, rng) -> list[Sample]:
    out = []
    for y in layouts_of((3, 4), dtype, rng):
        out.append(Sample((y,), name=f"{y}"))
        out.append(Sample((y,), {"dx": 0.5, "dim": 0}, f"{y} dx dim 0"))
    y = make((3, 4), dtype, rng)
    out.append(Sample((y, make((4,), dtype, rng)), name="x along the last dim"))
    out.append(Sample((y, make((3,), dtype, rng)), {"dim": 0}, "x along dim 0"))
    out.append(Sample((y, make((3, 4), dtype, rng, layout="transposed")), name="x full shape"))
    out.append(Sample((y, make((4,), "float64", rng)), name="x promotes"))
    out.append(Sample((make((2, 0), dtype, rng),), name="no samples"))
    out.append(Sample((make((2, 0), dtype, rng),), {"dx": 3}, "no samples dx"))
    out.append(Sample((make((2, 1), dtype, rng),), name="one sample"))
    out.append(Sample((make((5,), dtype, rng),), {"dx": 2}, "int dx"))
    return out


def _errors() -> list[ErrorSample]:
    y = T(np.ones((3, 4), np.float32))
    return [ErrorSample(Sample((y, T(np.ones(3, np.float32)))), RuntimeError, "one `x` value for each sample point")]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


OPS = [OpInfo(name, _call(name), DTYPES, _samples, _errors) for name in ("trapezoid", "trapz", "cumulative_trapezoid")]
