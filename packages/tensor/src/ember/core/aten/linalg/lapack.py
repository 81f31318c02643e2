"""Dense linear algebra on NumPy arrays that ``numpy.linalg`` lacks or does not report per matrix.

Every routine works on a stack of matrices ``(..., m, n)`` at once: the loops run over one matrix
dimension, each step vectorized over the batch (and the right-hand sides).

- ``lu_factor``: LU with partial pivoting, LAPACK's ``getf2`` step for step (the pivot is the first
  entry of largest magnitude, ``|re| + |im|`` for complex numbers as LAPACK's ``izamax`` measures it),
  giving the same packed ``LU``, 1-based ``pivots`` and ``info`` (the 1-based index of the first zero
  pivot, 0 when there is none) as PyTorch's ``linalg.lu_factor_ex``.
- ``triangular_solve``: substitution with a triangular matrix, from either side; a zero on the
  diagonal gives inf and nan, as LAPACK's ``trsm`` does, rather than an error.
- ``cholesky_info``: the order of the first leading minor that is not positive-definite, per matrix.
- ``expm``: the matrix exponential by scaling and squaring with Higham's degree-13 Padé approximant
  (N. J. Higham, SIAM J. Matrix Anal. Appl. 26(4), 2005), the method PyTorch's CPU kernel uses too.
"""

from __future__ import annotations

import numpy as np


def _batched(a: np.ndarray) -> tuple[np.ndarray, tuple]:
    batch = a.shape[:-2]
    return a.reshape((-1, *a.shape[-2:])), batch


def lu_factor(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(LU, pivots, info)`` of ``a`` (..., m, n): ``P A = L U`` with L unit lower triangular."""
    work, batch = _batched(np.array(a, copy=True))
    count, m, n = work.shape
    k = min(m, n)
    pivots = np.zeros((count, k), np.int32)
    info = np.zeros(count, np.int32)
    lanes = np.arange(count)
    for j in range(k):
        column = work[:, j:, j]
        size = np.abs(column.real) + np.abs(column.imag) if np.iscomplexobj(column) else np.abs(column)
        p = j + np.argmax(size, axis=1) if m > j else np.full(count, j)
        pivots[:, j] = p + 1
        row = work[lanes, j, :].copy()
        work[lanes, j, :] = work[lanes, p, :]
        work[lanes, p, :] = row
        pivot = work[:, j, j]
        zero = pivot == 0
        info = np.where((info == 0) & zero, j + 1, info).astype(np.int32)
        if j + 1 < m:
            # A zero pivot leaves its column unscaled (getf2 skips the division), and the update
            # below then adds nothing from it.
            scale = np.where(zero, 1, pivot)
            below = work[:, j + 1 :, j] / scale[:, None]
            below = np.where(zero[:, None], work[:, j + 1 :, j], below)
            work[:, j + 1 :, j] = below
            if j + 1 < n:
                update = below[:, :, None] * work[:, j, None, j + 1 :]
                work[:, j + 1 :, j + 1 :] -= np.where(zero[:, None, None], 0, update)
    return work.reshape(a.shape), pivots.reshape((*batch, k)), info.reshape(batch)


def permutation_of(pivots: np.ndarray, m: int) -> np.ndarray:
    """The row order ``perm`` with ``(P A)[i] = A[perm[i]]`` from LAPACK's 1-based row swaps."""
    flat = pivots.reshape((-1, pivots.shape[-1]))
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    lanes = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j] - 1
        held = perm[lanes, j].copy()
        perm[lanes, j] = perm[lanes, p]
        perm[lanes, p] = held
    return perm.reshape((*pivots.shape[:-1], m))


def triangular_solve(a: np.ndarray, b: np.ndarray, upper: bool, left: bool = True, unit: bool = False) -> np.ndarray:
    """``X`` with ``A X = B`` (``left``) or ``X A = B``, reading only A's ``upper`` or lower triangle.

    ``a`` and ``b`` broadcast over their batch dims."""
    if not left:
        # X A = B  <=>  A^T X^T = B^T, and A^T's triangle is the other one.
        return np.swapaxes(
            triangular_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not upper, True, unit), -1, -2
        )
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    dtype = np.result_type(a, b)
    a = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    x = np.array(np.broadcast_to(b, (*batch, *b.shape[-2:])), dtype=dtype, copy=True)
    n = a.shape[-1]
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in order:
            done = slice(i + 1, n) if upper else slice(0, i)
            if done.start != done.stop:
                x[..., i, :] -= np.einsum("...k,...kj->...j", a[..., i, done], x[..., done, :])
            if not unit:
                x[..., i, :] /= a[..., i, i, None]
    return x


def lu_solve(lu: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^-1 B`` from ``A``'s ``lu_factor`` (square ``A``; batch dims broadcast)."""
    n = lu.shape[-1]
    perm = permutation_of(pivots, n)
    batch = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    perm = np.broadcast_to(perm, (*batch, n))
    permuted = np.take_along_axis(b, perm[..., None], axis=-2)
    y = triangular_solve(lu, permuted, upper=False, unit=True)
    return triangular_solve(lu, y, upper=True)


def cholesky_info(a: np.ndarray) -> np.ndarray:
    """Per matrix of ``a`` (..., n, n), Hermitian by its lower triangle: 0 where it is positive-definite,
    else the order of the first leading minor that is not (LAPACK's ``potrf`` info)."""
    flat, batch = _batched(a)
    info = np.zeros(flat.shape[0], np.int32)
    n = a.shape[-1]
    try:
        np.linalg.cholesky(flat)
        return info.reshape(batch)
    except np.linalg.LinAlgError:
        pass
    for i, matrix in enumerate(flat):
        lower = np.tril(matrix)
        hermitian = lower + np.conj(np.tril(matrix, -1)).swapaxes(-1, -2)
        for order in range(1, n + 1):
            try:
                np.linalg.cholesky(hermitian[:order, :order])
            except np.linalg.LinAlgError:
                info[i] = order
                break
    return info.reshape(batch)


_PADE13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
# The largest 1-norms for which the Padé approximants of degree 3, 5, 7, 9 and 13 are accurate to
# the unit roundoff of float64, and for degree 13 in float32 (Higham 2005, Table 2.3).
_THETA64 = (1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1, 2.097847961257068e0, 5.371920351148152e0)
_THETA32 = 3.925724783138660e0


def _pade(a: np.ndarray, degree: int, eye: np.ndarray) -> np.ndarray:
    """The [degree/degree] Padé approximant of exp at ``a``, for the degrees 3, 5, 7, 9 and 13."""
    coefficients = {
        3: (120.0, 60.0, 12.0, 1.0),
        5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
        7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
        9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0),
        13: _PADE13,
    }[degree]
    b = coefficients
    a2 = a @ a
    if degree == 13:
        a4 = a2 @ a2
        a6 = a4 @ a2
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    else:
        powers = [eye, a2]
        while len(powers) < (degree + 1) // 2:
            powers.append(powers[-1] @ a2)
        u = a @ sum(b[2 * i + 1] * p for i, p in enumerate(powers))
        v = sum(b[2 * i] * p for i, p in enumerate(powers))
    return np.linalg.solve(v - u, v + u)


def expm(a: np.ndarray) -> np.ndarray:
    """``exp(A)`` of every matrix of ``a`` (..., n, n), computed in ``a``'s precision."""
    flat, _ = _batched(a)
    out = np.empty_like(flat)
    n = a.shape[-1]
    eye = np.eye(n, dtype=a.dtype)
    single = a.dtype in (np.float32, np.complex64)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, matrix in enumerate(flat):
            if not np.all(np.isfinite(matrix)):
                out[i] = np.nan
                continue
            norm = np.abs(matrix).sum(axis=0).max() if n else 0.0
            if not single:
                degree = next((d for d, theta in zip((3, 5, 7, 9), _THETA64[:4], strict=True) if norm <= theta), None)
                if degree is not None:
                    out[i] = _pade(matrix, degree, eye)
                    continue
            theta = _THETA32 if single else _THETA64[4]
            squarings = max(0, int(np.ceil(np.log2(norm / theta)))) if norm > theta else 0
            result = _pade(matrix / (2.0**squarings), 13, eye)
            for _ in range(squarings):
                result = result @ result
            out[i] = result
    return out.reshape(a.shape)
