"""Samples for ``diff``, ``cov`` and ``corrcoef`` (``ember.core.aten.reductions.covariance``): orders
beyond the size, prepend and append, bool xor, every layout; cov with corrections, frequency and
analytic weights, 1-D input and integer dtypes; and their errors."""

from __future__ import annotations

import numpy as np
from opinfo import ALL_REAL, FLOATS, ErrorSample, OpInfo, Sample, T, layouts_of, make


def _ones(*shape, dtype=np.float32):
    return T(np.ones(shape, dtype))


def _diff_samples(dtype: str, rng) -> list[Sample]:
    out = [Sample((a,), name=f"{a}") for a in layouts_of((3, 5), dtype, rng)]
    a = make((3, 5), dtype, rng)
    out.append(Sample((a, 2, 0), name="n=2 dim 0"))
    out.append(Sample((a, 7), name="order beyond the size"))
    out.append(Sample((a, 1, -1, make((3, 2), dtype, rng), make((3, 1), dtype, rng)), name="prepend and append"))
    out.append(Sample((a, 0), name="n=0"))
    out.append(Sample((make((0,), dtype, rng),), name="empty"))
    return out


def _diff_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((T(np.float32(1)),)), RuntimeError, "at least one-dimensional"),
        ErrorSample(Sample((_ones(3), -1)), RuntimeError, "order must be non-negative"),
        ErrorSample(Sample((_ones(3), 1, -1, _ones(1, 1))), RuntimeError, "same dimension as input"),
    ]


def _cov_samples(dtype: str, rng) -> list[Sample]:
    out = [Sample((a,), name=f"{a}") for a in layouts_of((3, 6), dtype, rng)]
    a = make((3, 6), dtype, rng)
    out.append(Sample((a,), {"correction": 0}, "correction 0"))
    out.append(Sample((a,), {"correction": 2}, "correction 2"))
    out.append(Sample((make((6,), dtype, rng),), name="1-d"))
    return out


def _cov_weighted(dtype: str, rng) -> list[Sample]:
    a = make((3, 6), dtype, rng)
    out = []
    if dtype in FLOATS:
        fw, aw = (
            T(rng.integers(1, 4, 6)),
            T(rng.uniform(0.1, 2, 6).astype(np.dtype(dtype) if dtype != "bfloat16" else np.float32)),
        )
        if dtype != "bfloat16":
            out.append(Sample((a,), {"fweights": fw}, "fweights"))
            out.append(Sample((a,), {"aweights": aw}, "aweights"))
            out.append(Sample((a,), {"fweights": fw, "aweights": aw, "correction": 0}, "both, correction 0"))
            out.append(Sample((a,), {"fweights": fw, "aweights": aw}, "both"))
    return out


def _cov_errors() -> list[ErrorSample]:
    return [ErrorSample(Sample((_ones(2, 2, 2),)), RuntimeError, "two or fewer dimensions")]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _method(name):
    return lambda lib, self, *a, **k: getattr(self, name)(*a, **k)


NUMERIC = (*FLOATS, "int64", "int32")
OPS = [
    OpInfo("diff", _call("diff"), ALL_REAL, _diff_samples, _diff_errors, out=True),
    OpInfo("Tensor.diff", _method("diff"), ("float32",), _diff_samples),
    OpInfo("cov", _call("cov"), NUMERIC, _cov_samples, _cov_errors, tolerances={"bfloat16": (3e-2, 3e-2)}),
    OpInfo("Tensor.cov", _method("cov"), ("float32",), _cov_samples),
    # With weights the degrees of freedom are read from their values (as PyTorch reads them): no meta.
    OpInfo("cov_weighted", _call("cov"), ("float32", "float64"), _cov_weighted, meta=False),
    OpInfo("corrcoef", _call("corrcoef"), ("float32", "float64", "int64"), _cov_samples, _cov_errors),
]
