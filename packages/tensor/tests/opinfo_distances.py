"""Samples for ``cdist`` (``ember.core.aten.linalg.distances``): every p PyTorch special-cases (0, 1,
2, inf) and a general one, both of its constructions for p = 2 (pairwise differences at 25 rows or
fewer, the matrix product above or when asked for), broadcast batches, empty sizes and its errors."""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, layouts_of, make


def _samples(dtype: str, rng) -> list[Sample]:
    out = []
    for x1 in layouts_of((4, 3), dtype, rng):
        out.append(Sample((x1, make((5, 3), dtype, rng)), name=f"{x1}"))
    x1, x2 = make((2, 4, 3), dtype, rng), make((5, 3), dtype, rng)
    for p in (0.0, 1.0, 2.0, 3.5, float("inf"), 0.5):
        out.append(Sample((x1, x2), {"p": p}, f"p={p}"))
    big = make((30, 3), dtype, rng)
    out.append(Sample((big, x2), name="more than 25 rows: the matrix product"))
    out.append(Sample((big, x2), {"compute_mode": "donot_use_mm_for_euclid_dist"}, "more than 25 rows, no mm"))
    out.append(Sample((x1, x2), {"compute_mode": "use_mm_for_euclid_dist"}, "mm asked for"))
    out.append(Sample((make((3, 1, 4, 2), dtype, rng), make((2, 5, 2), dtype, rng)), name="batches broadcast"))
    out.append(Sample((make((2, 0, 3), dtype, rng), x2), name="no rows"))
    out.append(Sample((make((2, 4, 0), dtype, rng), make((5, 0), dtype, rng)), name="no columns"))
    return out


def _ones(*shape, dtype=np.float32):
    return T(np.ones(shape, dtype))


def _errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(3, 2, dtype=np.int64), _ones(3, 2, dtype=np.int64))), RuntimeError, "floating-point"),
        ErrorSample(Sample((_ones(3), _ones(3, 3))), RuntimeError, "at least 2D tensors, X1 got: 1D"),
        ErrorSample(Sample((_ones(3, 2), _ones(3))), RuntimeError, "at least 2D tensors, X2 got: 1D"),
        ErrorSample(Sample((_ones(3, 2), _ones(3, 4))), RuntimeError, "same number of columns"),
        ErrorSample(Sample((_ones(3, 2), _ones(3, 2)), {"p": -1.0}), RuntimeError, "non-negative p"),
        ErrorSample(Sample((_ones(3, 2), _ones(3, 2, dtype=np.float64))), RuntimeError, "expected scalar type"),
        ErrorSample(Sample((_ones(3, 2), _ones(3, 2)), {"compute_mode": "foo"}), ValueError, "compute_mode"),
        ErrorSample(
            Sample((_ones(3, 2, dtype=np.float16), _ones(3, 2, dtype=np.float16))), NotImplementedError, "Half"
        ),
    ]


OPS = [OpInfo("cdist", lambda lib, *a, **k: lib.cdist(*a, **k), ("float32", "float64"), _samples, _errors)]
