"""Samples for the factorizations and solvers (``ember.core.aten.linalg.factorizations``,
``solvers``) and ``ember.linalg``'s functions over them, with PyTorch's top-level names.

Matrices are well conditioned (a random matrix plus ``n`` times the identity) so that values and
gradients are stable in float32. Ops that need symmetric or positive-definite input are called on
``X + X^T`` or ``X X^T + I`` inside the call, so that gradients are those of a function of every
entry, as PyTorch's tests make them. Eigenvectors are compared through vectors made unique in sign.
"""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T

FLOATS = ("float32", "float64")
TOL = {"float32": (1e-4, 1e-4), "float64": (1e-7, 1e-7)}
LOOSE = {"float32": (2e-3, 2e-3), "float64": (1e-6, 1e-6)}
SQUARE = [(3, 3), (2, 4, 4), (1, 1), (2, 1, 2, 2)]
RECT = [(4, 3), (3, 5), (2, 4, 2)]


def matrix(shape, dtype, rng, layout="contiguous", shift=True) -> T:
    array = rng.uniform(-1, 1, size=shape)
    if shift and shape[-1] == shape[-2]:
        array = array + shape[-1] * np.eye(shape[-1])
    if layout == "expanded":
        array = np.broadcast_to(array[:1], shape).copy()
    return T(array.astype(dtype), layout)


def squares(dtype, rng, shapes=SQUARE, shift=True) -> list[T]:
    out = []
    for shape in shapes:
        out.append(matrix(shape, dtype, rng, shift=shift))
        out.append(matrix(shape, dtype, rng, "transposed", shift))
        if len(shape) > 2 and shape[0] > 1:
            out.append(matrix(shape, dtype, rng, "expanded", shift))
    return out


def _one(sample_args):
    return lambda dtype, rng: [Sample((a,), name=repr(a)) for a in sample_args(dtype, rng)]


def _sym(lib, A):
    return A + A.mT


def _pd(lib, A):
    return A.matmul(A.mT) + lib.eye(A.shape[-1], dtype=A.dtype, device=A.device)


def _signed(lib, V):
    with lib.no_grad():
        signs = V.gather(-2, V.abs().argmax(-2, keepdim=True)).sign()
    return V * signs


def _eigh(lib, A, **kwargs):
    values, vectors = lib.linalg.eigh(_sym(lib, A), **kwargs)
    return values, _signed(lib, vectors)


def _errors_square(name: str, call_args=lambda A: (A,)):
    def errors():
        return [
            ErrorSample(Sample(call_args(T(np.ones(3)))), RuntimeError, "at least 2 dimensions"),
            ErrorSample(Sample(call_args(T(np.ones((2, 3))))), RuntimeError, "square matrices"),
            ErrorSample(Sample(call_args(T(np.ones((2, 2), np.int64)))), RuntimeError, "floating point or complex"),
        ]

    return errors


def _singular_errors():
    return [
        ErrorSample(Sample((T(np.zeros((3, 3))),)), RuntimeError, "singular"),
        ErrorSample(Sample((T(np.zeros((2, 3, 3))),)), RuntimeError, r"Batch element 0"),
    ]


def _solve_samples(dtype, rng):
    out = []
    for shape in [(3, 3), (2, 4, 4)]:
        for A in squares(dtype, rng, [shape]):
            n = shape[-1]
            out.append(Sample((A, matrix((*shape[:-1], 2), dtype, rng)), name=f"{A} matrix B"))
            out.append(
                Sample(
                    (A, matrix((n,) if len(shape) == 2 else shape[:-1], dtype, rng, shift=False)), name=f"{A} vector"
                )
            )
            out.append(Sample((A, matrix((2, n), dtype, rng)), {"left": False}, name=f"{A} left=False"))
    out.append(Sample((matrix((3, 3), dtype, rng), matrix((2, 3, 4), dtype, rng)), name="broadcast B"))
    return out


def _triangular_samples(dtype, rng):
    out = []
    for upper in (True, False):
        for left in (True, False):
            for unit in (False, True):
                A = matrix((2, 3, 3), dtype, rng)
                B = matrix((2, 3, 2) if left else (2, 2, 3), dtype, rng)
                kwargs = {"upper": upper, "left": left, "unitriangular": unit}
                out.append(Sample((A, B), kwargs, name=str(kwargs)))
    out.append(Sample((matrix((3, 3), dtype, rng, "transposed"), matrix((4, 3, 1), dtype, rng)), {"upper": True}))
    return out


def _qr_samples(dtype, rng):
    out = []
    for shape in [(4, 3), (3, 3), (2, 5, 3), (3, 5)]:
        A = matrix(shape, dtype, rng)
        out.append(Sample((A,), name=f"{A}"))
        if shape[-1] >= shape[-2]:
            out.append(Sample((A,), {"mode": "complete"}, name=f"{A} complete"))
    return out


def _lu_samples(dtype, rng):
    return [Sample((a,), name=repr(a)) for a in squares(dtype, rng, [(3, 3), (2, 4, 4)], shift=False)]


def _lstsq_samples(dtype, rng):
    out = []
    for driver in (None, "gels", "gelsd", "gelss"):
        A = matrix((5, 3), dtype, rng)
        out.append(Sample((A, matrix((5, 2), dtype, rng)), {"driver": driver}, name=f"tall {driver}"))
    out.append(Sample((matrix((2, 4, 3), dtype, rng), matrix((4, 2), dtype, rng)), name="broadcast"))
    out.append(Sample((matrix((4, 3), dtype, rng), matrix((4,), dtype, rng, shift=False)), name="vector"))
    return out


def _lstsq(lib, A, B, **kwargs):
    # The solution and rank; the residuals and singular values follow the driver (their shapes are
    # compared through the meta test and the dedicated tests).
    result = lib.linalg.lstsq(A, B, **kwargs)
    return result.solution, result.residuals, result.rank, result.singular_values


def _lu_unpacked(lib, A):
    return lib.linalg.lu(A)


OPS = [
    OpInfo(
        "linalg.inv",
        lambda lib, A: lib.linalg.inv(A),
        FLOATS,
        _one(squares),
        errors=lambda: _errors_square("inv")() + _singular_errors(),
        tolerances=TOL,
    ),
    OpInfo("linalg.inv_ex", lambda lib, A: lib.linalg.inv_ex(A), FLOATS, _one(squares), tolerances=TOL),
    OpInfo("inverse", lambda lib, A: lib.inverse(A), FLOATS, _one(squares), tolerances=TOL),
    OpInfo("Tensor.inverse", lambda lib, A: A.inverse(), ("float64",), _one(squares), tolerances=TOL),
    OpInfo(
        "linalg.det",
        lambda lib, A: lib.linalg.det(A),
        FLOATS,
        _one(squares),
        errors=_errors_square("det"),
        tolerances=TOL,
    ),
    OpInfo("det", lambda lib, A: lib.det(A), ("float64",), _one(squares), tolerances=TOL),
    OpInfo("Tensor.det", lambda lib, A: A.det(), ("float64",), _one(squares), tolerances=TOL),
    OpInfo("linalg.slogdet", lambda lib, A: lib.linalg.slogdet(A), FLOATS, _one(squares), tolerances=TOL),
    OpInfo("logdet", lambda lib, A: lib.logdet(A), FLOATS, _one(squares), tolerances=TOL),
    OpInfo("slogdet", lambda lib, A: lib.slogdet(A), ("float64",), _one(squares), tolerances=TOL),
    OpInfo(
        "linalg.cholesky",
        lambda lib, A, **k: lib.linalg.cholesky(_pd(lib, A), **k),
        FLOATS,
        _one(squares),
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.cholesky direct",
        lambda lib, A: lib.linalg.cholesky(A),
        ("float64",),
        lambda d, r: [Sample((T((a @ a.T + np.eye(3)).astype(d)),)) for a in [r.uniform(-1, 1, (3, 3))]],
        errors=lambda: [
            ErrorSample(Sample((T(-np.eye(3)),)), RuntimeError, "not positive-definite"),
            ErrorSample(Sample((T(-np.ones((2, 3, 3))),)), RuntimeError, "Batch element 0"),
            ErrorSample(Sample((T(np.eye(3, dtype=np.float16)),)), NotImplementedError, "Half"),
        ],
        transforms=False,  # the lower triangle alone is read: the gradient entries are checked above
    ),
    OpInfo(
        "linalg.cholesky upper",
        lambda lib, A: lib.linalg.cholesky(_pd(lib, A), upper=True),
        FLOATS,
        _one(squares),
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.cholesky_ex", lambda lib, A: lib.linalg.cholesky_ex(_pd(lib, A)), FLOATS, _one(squares), tolerances=TOL
    ),
    OpInfo(
        "cholesky_ex not pd",
        lambda lib, A: lib.linalg.cholesky_ex(A - 10 * lib.eye(A.shape[-1], dtype=A.dtype, device=A.device)).info,
        ("float64",),
        _one(squares),
        meta=False,
    ),
    OpInfo(
        "cholesky_solve",
        lambda lib, B, A: lib.cholesky_solve(B, lib.linalg.cholesky(_pd(lib, A))),
        FLOATS,
        lambda dtype, rng: [
            Sample((matrix((3, 2), dtype, rng), matrix((3, 3), dtype, rng))),
            Sample((matrix((2, 4, 1), dtype, rng), matrix((2, 4, 4), dtype, rng))),
        ],
        tolerances=LOOSE,
    ),
    OpInfo(
        "cholesky_inverse",
        lambda lib, A: lib.cholesky_inverse(lib.linalg.cholesky(_pd(lib, A))),
        FLOATS,
        _one(squares),
        tolerances=LOOSE,
        # PyTorch's forward-mode rule for cholesky_inverse disagrees with finite differences (ours
        # agrees); its reverse mode is the one of cholesky_solve, swept above.
        transforms=False,
    ),
    OpInfo(
        "linalg.qr",
        lambda lib, A, **k: lib.linalg.qr(A, **k),
        FLOATS,
        _qr_samples,
        tolerances=TOL,
        errors=lambda: [ErrorSample(Sample((T(np.eye(2)),), {"mode": "x"}), RuntimeError, "unrecognized mode")],
    ),
    OpInfo(
        "linalg.qr mode=r",
        lambda lib, A: lib.linalg.qr(A, mode="r"),
        FLOATS,
        lambda d, r: [Sample((matrix(s, d, r),)) for s in [(4, 3), (2, 3, 5)]],
        tolerances=TOL,
        transforms=False,  # no gradient without Q, in PyTorch as here
    ),
    OpInfo(
        "qr", lambda lib, A: lib.qr(A), ("float64",), lambda d, r: [Sample((matrix((4, 3), d, r),))], tolerances=TOL
    ),
    OpInfo("linalg.eigh", _eigh, FLOATS, _one(squares), tolerances=LOOSE),
    OpInfo(
        "linalg.eigvalsh", lambda lib, A: lib.linalg.eigvalsh(_sym(lib, A)), FLOATS, _one(squares), tolerances=LOOSE
    ),
    OpInfo(
        "linalg.eigvals",
        lambda lib, A: lib.linalg.eigvals(A),
        ("float64",),
        _one(squares),
        tolerances=TOL,
        transforms=False,
    ),
    OpInfo("linalg.lu_factor", lambda lib, A: lib.linalg.lu_factor(A), FLOATS, _lu_samples, tolerances=TOL),
    OpInfo("linalg.lu_factor_ex", lambda lib, A: lib.linalg.lu_factor_ex(A), FLOATS, _lu_samples, tolerances=TOL),
    OpInfo("linalg.lu", _lu_unpacked, FLOATS, _lu_samples, tolerances=TOL),
    OpInfo("lu", lambda lib, A: lib.lu(A), ("float64",), _lu_samples, tolerances=TOL),
    OpInfo(
        "linalg.lu_solve",
        lambda lib, A, B: lib.linalg.lu_solve(*lib.linalg.lu_factor(A), B),
        FLOATS,
        lambda d, r: [
            Sample((matrix((3, 3), d, r), matrix((3, 2), d, r))),
            Sample((matrix((2, 3, 3), d, r), matrix((2, 3, 1), d, r))),
        ],
        tolerances=LOOSE,
    ),
    OpInfo(
        "linalg.solve",
        lambda lib, A, B, **k: lib.linalg.solve(A, B, **k),
        FLOATS,
        _solve_samples,
        tolerances=TOL,
        errors=lambda: [
            ErrorSample(Sample((T(np.zeros((3, 3))), T(np.ones(3)))), RuntimeError, "singular"),
            ErrorSample(Sample((T(np.eye(3)), T(np.ones((4, 2))))), RuntimeError, "Incompatible shapes"),
        ],
    ),
    OpInfo(
        "linalg.solve_ex", lambda lib, A, B, **k: lib.linalg.solve_ex(A, B, **k), FLOATS, _solve_samples, tolerances=TOL
    ),
    OpInfo(
        "linalg.solve_triangular",
        lambda lib, A, B, **k: lib.linalg.solve_triangular(A, B, **k),
        FLOATS,
        _triangular_samples,
        tolerances=TOL,
    ),
    OpInfo(
        "triangular_solve",
        # The coefficient is made triangular first: PyTorch's forward-mode rule for this legacy op
        # takes the tangent of the whole matrix, although only one triangle is read.
        lambda lib, B, A, **k: lib.triangular_solve(B, A.tril() if k.get("upper") is False else A.triu(), **k),
        ("float64",),
        lambda d, r: [Sample((matrix((3, 2), d, r), matrix((3, 3), d, r)), k) for k in ({}, {"upper": False})],
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.ldl_factor",
        lambda lib, A, **k: lib.linalg.ldl_factor(_sym(lib, A), **k),
        FLOATS,
        lambda d, r: (
            [Sample((a,), name=repr(a)) for a in squares(d, r, [(3, 3), (2, 4, 4)], shift=False)]
            + [Sample((matrix((3, 3), d, r),), {"hermitian": True}, name="hermitian")]
        ),
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.ldl_factor_ex",
        lambda lib, A: lib.linalg.ldl_factor_ex(_sym(lib, A)),
        FLOATS,
        lambda d, r: [Sample((a,), name=repr(a)) for a in squares(d, r, [(4, 4)], shift=False)],
        tolerances=TOL,
    ),
    OpInfo(
        "linalg.ldl_solve",
        lambda lib, A, B: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(_sym(lib, A)), B),
        FLOATS,
        lambda d, r: [
            Sample((matrix((3, 3), d, r), matrix((3, 2), d, r))),
            Sample((matrix((2, 4, 4), d, r), matrix((4, 1), d, r)), name="broadcast"),
        ],
        tolerances=LOOSE,
    ),
    OpInfo("linalg.lstsq", _lstsq, FLOATS, _lstsq_samples, tolerances=LOOSE),
    OpInfo(
        "linalg.matrix_exp",
        lambda lib, A: lib.linalg.matrix_exp(A),
        FLOATS,
        lambda d, r: [
            Sample((T((r.uniform(-1, 1, size=s) * c).astype(d)),))
            for s, c in [((3, 3), 0.5), ((2, 3, 3), 3.0), ((4, 4), 0.01)]
        ],
        tolerances=LOOSE,
    ),
]
