"""Samples for ``ember.linalg``'s composite functions (``linalg_functions.py``) and the top-level
names over them: norms, pseudo-inverse, rank, condition number, powers, products and tensor forms.

Matrices for the SVD-based functions have distinct singular values (random ones), so gradients are
unique; the ones for inverses are shifted by ``n`` times the identity.
"""

from __future__ import annotations

import math

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T
from opinfo_factorizations import FLOATS, LOOSE, TOL, matrix

NORM_TOL = {"float32": (2e-5, 2e-5), "float64": (1e-7, 1e-7)}


def _matrix_norm_samples(dtype, rng):
    out = []
    for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        out.append(Sample((matrix((3, 4), dtype, rng, shift=False),), {"ord": ord}, name=f"ord={ord}"))
    out.append(Sample((matrix((2, 3, 3), dtype, rng),), {"ord": 1, "keepdim": True}, name="keepdim"))
    out.append(Sample((matrix((3, 2, 4), dtype, rng, shift=False),), {"ord": "nuc", "dim": (0, 2)}, name="dims"))
    out.append(
        Sample((matrix((3, 2, 4), dtype, rng, shift=False),), {"ord": -math.inf, "dim": (2, 0), "keepdim": True})
    )
    return out


def _norm_samples(dtype, rng):
    out = [Sample((matrix((3, 4), dtype, rng, shift=False),), name="default")]
    out.append(Sample((matrix((5,), dtype, rng, shift=False),), {"ord": 3}, name="vector ord"))
    out.append(Sample((matrix((3, 4), dtype, rng, shift=False),), {"ord": "nuc"}, name="matrix ord"))
    out.append(Sample((matrix((2, 3, 4), dtype, rng, shift=False),), {"dim": 1}, name="dim int"))
    out.append(Sample((matrix((2, 3, 4), dtype, rng, shift=False),), {"ord": 2, "dim": (1, 2)}, name="dim pair"))
    return out


def _pinv_samples(dtype, rng):
    out = [Sample((matrix(s, dtype, rng, shift=False),), name=str(s)) for s in [(3, 4), (4, 3), (2, 3, 3)]]
    return out


def _rank_samples(dtype, rng):
    low = rng.uniform(-1, 1, (4, 2)) @ rng.uniform(-1, 1, (2, 5))
    return [
        Sample((matrix((3, 4), dtype, rng, shift=False),)),
        Sample((T(low.astype(dtype)),), name="rank 2"),
        Sample((T(low.astype(dtype)),), {"atol": 1.0}, name="atol"),
        Sample((matrix((3, 3), dtype, rng),), {"hermitian": True}, name="hermitian"),
    ]


def _cross_samples(dtype, rng):
    return [
        Sample((matrix((4, 3), dtype, rng, shift=False), matrix((4, 3), dtype, rng, shift=False))),
        Sample((matrix((3, 2), dtype, rng, shift=False), matrix((1, 2), dtype, rng, shift=False)), {"dim": 0}),
    ]


def _multi_dot_samples(dtype, rng):
    return [
        Sample(([matrix((2, 3), dtype, rng), matrix((3, 4), dtype, rng)],), name="two"),
        Sample(
            (
                [
                    matrix((3,), dtype, rng, shift=False),
                    matrix((3, 5), dtype, rng),
                    matrix((5, 2), dtype, rng),
                    matrix((2,), dtype, rng, shift=False),
                ],
            ),
            name="vectors",
        ),
        Sample(([matrix((6, 2), dtype, rng), matrix((2, 5), dtype, rng), matrix((5, 3), dtype, rng)],), name="three"),
    ]


def _power_samples(dtype, rng):
    return [
        Sample((matrix((2, 3, 3), dtype, rng, shift=False) if n >= 0 else matrix((3, 3), dtype, rng), n), name=f"n={n}")
        for n in (0, 1, 2, 5, -1, -3)
    ]


def _householder_samples(dtype, rng):
    return [
        Sample((matrix((4, 3), dtype, rng, shift=False), matrix((2,), dtype, rng, shift=False))),
        Sample((matrix((2, 3, 3), dtype, rng, shift=False), matrix((2, 3), dtype, rng, shift=False))),
    ]


def _errors():
    return [
        ErrorSample(Sample((T(np.ones(3)),), {"ord": "fro"}), RuntimeError, "at least 2 dimensions"),
        ErrorSample(Sample((T(np.ones((2, 2))),), {"ord": 3}), RuntimeError, "not supported"),
    ]


OPS = [
    OpInfo(
        "linalg.matrix_norm",
        lambda lib, A, **k: lib.linalg.matrix_norm(A, **k),
        FLOATS,
        _matrix_norm_samples,
        errors=_errors,
        tolerances=NORM_TOL,
    ),
    OpInfo("linalg.norm", lambda lib, A, **k: lib.linalg.norm(A, **k), FLOATS, _norm_samples, tolerances=NORM_TOL),
    OpInfo("linalg.pinv", lambda lib, A, **k: lib.linalg.pinv(A, **k), FLOATS, _pinv_samples, tolerances=LOOSE),
    OpInfo(
        "linalg.pinv rtol",
        lambda lib, A, **k: lib.linalg.pinv(A, **k),
        FLOATS,
        lambda d, r: [
            Sample((matrix((4, 3), d, r, shift=False),), {"rtol": 0.3}),
            Sample((matrix((3, 3), d, r),), {"atol": 2.0}),
        ],
        tolerances=LOOSE,
        # A truncated pseudo-inverse: PyTorch's gradient is the formula of the untruncated one,
        # ours the derivative of what is computed.
        transforms=False,
    ),
    OpInfo(
        "linalg.pinv hermitian",
        lambda lib, A: lib.linalg.pinv(A + A.mT, hermitian=True),
        FLOATS,
        lambda d, r: [Sample((matrix((3, 3), d, r),)), Sample((matrix((2, 4, 4), d, r),))],
        tolerances=LOOSE,
        # Ours differentiates through eigh (a function of one triangle); PyTorch's uses the general
        # pseudo-inverse formula: the two agree on symmetric directions only.
        transforms=False,
    ),
    OpInfo(
        "pinverse",
        lambda lib, A: lib.pinverse(A),
        ("float64",),
        lambda d, r: [Sample((matrix((3, 5), d, r, shift=False),))],
        tolerances=TOL,
    ),
    OpInfo("linalg.matrix_rank", lambda lib, A, **k: lib.linalg.matrix_rank(A, **k), FLOATS, _rank_samples),
    OpInfo(
        "linalg.cond",
        lambda lib, A, *a: lib.linalg.cond(A, *a),
        FLOATS,
        lambda d, r: [Sample((matrix((3, 3), d, r),) + p) for p in [(), ("fro",), (1,), (-2,)]],
        tolerances=LOOSE,
    ),
    OpInfo(
        "linalg.matrix_power", lambda lib, A, n: lib.linalg.matrix_power(A, n), FLOATS, _power_samples, tolerances=LOOSE
    ),
    OpInfo("matrix_power", lambda lib, A, n: A.matrix_power(n), ("float64",), _power_samples, tolerances=TOL),
    OpInfo("linalg.cross", lambda lib, a, b, **k: lib.linalg.cross(a, b, **k), FLOATS, _cross_samples),
    OpInfo(
        "cross",
        lambda lib, a, b: lib.cross(a, b),
        ("float64",),
        lambda d, r: [Sample((matrix((3, 2), d, r), matrix((3, 2), d, r)))],
    ),
    OpInfo(
        "linalg.vecdot",
        lambda lib, a, b, **k: lib.linalg.vecdot(a, b, **k),
        FLOATS,
        lambda d, r: [
            Sample((matrix((2, 3), d, r), matrix((3,), d, r, shift=False))),
            Sample((matrix((2, 3), d, r), matrix((2, 3), d, r)), {"dim": 0}),
        ],
    ),
    OpInfo(
        "linalg.multi_dot", lambda lib, ts: lib.linalg.multi_dot(ts), FLOATS, _multi_dot_samples, tolerances=NORM_TOL
    ),
    OpInfo(
        "chain_matmul",
        lambda lib, *ts: lib.chain_matmul(*ts),
        ("float64",),
        lambda d, r: [Sample((matrix((2, 3), d, r), matrix((3, 4), d, r), matrix((4, 2), d, r)))],
    ),
    OpInfo(
        "linalg.tensorinv",
        lambda lib, A, **k: lib.linalg.tensorinv(A, **k),
        FLOATS,
        lambda d, r: [
            Sample((T((r.uniform(-1, 1, (6, 6)) + 6 * np.eye(6)).reshape(2, 3, 6).astype(d)),), {"ind": 2}),
            Sample((T((r.uniform(-1, 1, (4, 4)) + 4 * np.eye(4)).reshape(4, 2, 2).astype(d)),), {"ind": 1}),
        ],
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.tensorsolve",
        lambda lib, A, B, **k: lib.linalg.tensorsolve(A, B, **k),
        FLOATS,
        lambda d, r: [
            Sample(
                (
                    T((r.uniform(-1, 1, (6, 6)) + 6 * np.eye(6)).reshape(2, 3, 6).astype(d)),
                    matrix((2, 3), d, r, shift=False),
                )
            ),
            Sample(
                (
                    T((r.uniform(-1, 1, (6, 6)) + 6 * np.eye(6)).reshape(6, 2, 3).astype(d)),
                    matrix((2, 3), d, r, shift=False),
                ),
                {"dims": (0,)},
            ),
        ],
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.diagonal",
        lambda lib, A, **k: lib.linalg.diagonal(A, **k),
        FLOATS,
        lambda d, r: [
            Sample((matrix((2, 3, 4), d, r),)),
            Sample((matrix((2, 3, 4), d, r),), {"offset": 1, "dim1": 0, "dim2": 2}),
        ],
    ),
    OpInfo(
        "linalg.vander",
        lambda lib, x, **k: lib.linalg.vander(x, **k),
        (*FLOATS, "int64"),
        lambda d, r: [
            Sample((matrix((4,), d, r, shift=False) if d != "int64" else T(np.arange(4)),)),
            Sample((matrix((2, 3), d, r, shift=False) if d != "int64" else T(np.arange(6).reshape(2, 3)),), {"N": 5}),
        ],
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.householder_product",
        lambda lib, A, tau: lib.linalg.householder_product(A, tau),
        FLOATS,
        _householder_samples,
        tolerances=TOL,
    ),
    OpInfo(
        "svd legacy",
        lambda lib, A, **k: _signed_svd(lib, A, **k),
        FLOATS,
        lambda d, r: [
            Sample((matrix((4, 3), d, r, shift=False),)),
            Sample((matrix((2, 3, 4), d, r, shift=False),), {"some": False}),
        ],
        tolerances=TOL,
        meta=False,  # the outputs are sliced and rescaled, as linalg.svd's entry does
        check_strides=False,
    ),
    OpInfo(
        "svd compute_uv=False",
        lambda lib, A: lib.svd(A, compute_uv=False),
        FLOATS,
        lambda d, r: [Sample((matrix((4, 3), d, r, shift=False),))],
        tolerances=TOL,
        transforms=False,
    ),
    OpInfo(
        "lu_unpack",
        lambda lib, A: lib.lu_unpack(*lib.linalg.lu_factor(A)),
        ("float64",),
        lambda d, r: [Sample((matrix((3, 3), d, r, shift=False),))],
        tolerances=TOL,
    ),
    OpInfo(
        "geqrf",
        lambda lib, A: lib.geqrf(A),
        FLOATS,
        lambda d, r: [Sample((matrix(s, d, r, shift=False),)) for s in [(4, 3), (3, 5), (2, 3, 3)]],
        tolerances=TOL,
    ),
    OpInfo(
        "ormqr",
        lambda lib, A, C, **k: lib.ormqr(*lib.geqrf(A), C, **k),
        FLOATS,
        lambda d, r: (
            [Sample((matrix((4, 3), d, r, shift=False), matrix((4, 2), d, r)), k) for k in ({}, {"transpose": True})]
            + [Sample((matrix((4, 3), d, r, shift=False), matrix((2, 4), d, r)), {"left": False})]
        ),
        tolerances=TOL,
        transforms=False,  # PyTorch has no derivative of geqrf
    ),
    OpInfo(
        "frobenius_norm",
        lambda lib, A, *a: lib.frobenius_norm(A, *a),
        FLOATS,
        lambda d, r: [Sample((matrix((2, 3, 4), d, r), (1, 2))), Sample((matrix((2, 3), d, r), (0,), True))],
        tolerances=NORM_TOL,
    ),
    OpInfo(
        "nuclear_norm",
        lambda lib, A, *a: lib.nuclear_norm(A, *a),
        FLOATS,
        lambda d, r: [
            Sample((matrix((3, 4), d, r, shift=False),)),
            Sample((matrix((2, 3, 4), d, r, shift=False), (0, 2))),
        ],
        tolerances=NORM_TOL,
    ),
    OpInfo(
        "matrix_exp",
        lambda lib, A: lib.matrix_exp(A),
        ("float64",),
        lambda d, r: [Sample((matrix((3, 3), d, r, shift=False),))],
        tolerances=TOL,
    ),
]


def _signed_svd(lib, A, **kwargs):
    U, S, V = lib.svd(A, **kwargs)
    k = S.shape[-1]
    U, V = U[..., :k], V[..., :k]
    with lib.no_grad():
        signs = U.gather(-2, U.abs().argmax(-2, keepdim=True)).sign()
    return S, U * signs, V * signs
