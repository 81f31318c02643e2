"""Samples for the SVD (``ember.core.aten.linalg.svd``): ``linalg.svd`` and ``linalg.svdvals`` over
square, tall, wide and batched matrices in each layout.

Singular vectors are unique only up to sign, so ``linalg.svd`` is compared through vectors whose
largest-magnitude entry is made positive (the signs are constants, taken without gradient), and the
columns ``full_matrices`` adds are left out (any orthonormal completion is right). Expanded inputs
(repeated rows) are rank-deficient: their null-space vectors are arbitrary, so only ``svdvals`` takes
them. The raw outputs' shapes, strides and empty cases are in ``test_svd.py``.
"""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, layouts_of, make

SHAPES = [(3, 3), (4, 3), (3, 5), (2, 4, 3), (2, 2, 3), (1, 1)]
TOLERANCES = {"float32": (1e-4, 1e-5)}


def _svd(lib, A, **kwargs):
    U, S, Vh = lib.linalg.svd(A, **kwargs)
    k = S.shape[-1]
    U, Vh = U[..., :k], Vh[..., :k, :]
    with lib.no_grad():
        signs = U.gather(-2, U.abs().argmax(-2, keepdim=True)).sign()
    return S, U * signs, Vh * signs.mT


def _samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in SHAPES:
        for t in layouts_of(shape, dtype, rng, low=-3, high=3):
            if t.layout == "expanded":
                continue
            out.append(Sample((t,), name=f"{t}"))
            out.append(Sample((t,), {"full_matrices": False}, name=f"{t} full_matrices=False"))
    return out


def _svdvals_samples(dtype: str, rng) -> list[Sample]:
    out = [Sample((t,), name=f"{t}") for shape in SHAPES for t in layouts_of(shape, dtype, rng, low=-3, high=3)]
    out += [Sample((make(shape, dtype, rng),), name=f"empty {shape}") for shape in [(0, 3), (3, 0), (2, 0, 0)]]
    return out


def _errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((T(np.ones(3)),)), RuntimeError, "at least 2 dimensions"),
        ErrorSample(Sample((T(np.ones((2, 2), np.int64)),)), RuntimeError, "Expected a floating point or complex"),
        ErrorSample(Sample((T(np.ones((2, 2), np.float16)),)), NotImplementedError, "not implemented for 'Half'"),
        ErrorSample(Sample((T(np.array([[1.0, np.nan], [0.0, 1.0]])),)), RuntimeError, "non-finite values"),
        ErrorSample(Sample((T(np.eye(2)),), {"driver": "gesvd"}), RuntimeError, "driver="),
    ]


OPS = [
    OpInfo(
        "linalg.svd",
        _svd,
        ("float32", "float64"),
        _samples,
        errors=_errors,
        check_strides=False,  # the outputs are rescaled; the raw layouts are tested on their own
        meta=False,
        tolerances=TOLERANCES,
    ),
    OpInfo(
        "linalg.svdvals",
        lambda lib, A, **k: lib.linalg.svdvals(A, **k),
        ("float32", "float64", "complex64"),
        _svdvals_samples,
        tolerances={**TOLERANCES, "complex64": (1e-4, 1e-5)},
        # The gradient U diag(g) Vh takes the singular vectors of zero singular values, which are
        # any orthonormal basis of the null spaces: a rank-deficient (expanded) input has no one
        # gradient, and OpenBLAS's AVX2 and AVX-512 kernels pick different ones.
        no_unique_gradient=lambda sample: sample.args[0].layout == "expanded",
    ),
]
