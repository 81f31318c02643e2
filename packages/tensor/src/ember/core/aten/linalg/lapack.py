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


_BUNCH_KAUFMAN = (1 + 17**0.5) / 8


def ldl_factor(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``(LD, pivots, info)`` of one symmetric matrix by its lower triangle: LAPACK's ``sytf2``
    (Bunch-Kaufman pivoting, 1x1 and 2x2 blocks; a 2x2 block's two pivots are stored negated)."""
    a = np.array(a, copy=True)
    n = a.shape[0]
    pivots = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        step = 1
        absakk = abs(a[k, k])
        if k < n - 1:
            imax = k + 1 + int(np.argmax(np.abs(a[k + 1 :, k])))
            colmax = abs(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            info = info or k + 1
            kp = k
        else:
            if absakk >= _BUNCH_KAUFMAN * colmax:
                kp = k
            else:
                rowmax = np.max(np.abs(a[imax, k:imax]))
                if imax < n - 1:
                    rowmax = max(rowmax, np.max(np.abs(a[imax + 1 :, imax])))
                if absakk >= _BUNCH_KAUFMAN * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax]) >= _BUNCH_KAUFMAN * rowmax:
                    kp = imax
                else:
                    kp, step = imax, 2
            kk = k + step - 1
            if kp != kk:
                # Rows and columns kk and kp of the trailing lower triangle trade places.
                if kp < n - 1:
                    a[kp + 1 :, kk], a[kp + 1 :, kp] = a[kp + 1 :, kp].copy(), a[kp + 1 :, kk].copy()
                column, row = a[kk + 1 : kp, kk].copy(), a[kp, kk + 1 : kp].copy()
                a[kk + 1 : kp, kk], a[kp, kk + 1 : kp] = row, column
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if step == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if step == 1:
                if k < n - 1:
                    d11 = 1.0 / a[k, k]
                    x = a[k + 1 :, k].copy()
                    a[k + 1 :, k + 1 :] -= np.tril(d11 * np.outer(x, x))
                    a[k + 1 :, k] *= d11
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                for j in range(k + 2, n):
                    wk = d21 * (d11 * a[j, k] - a[j, k + 1])
                    wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
                    a[j:, j] -= a[j:, k] * wk + a[j:, k + 1] * wkp1
                    a[j, k], a[j, k + 1] = wk, wkp1
        if step == 1:
            pivots[k] = kp + 1
        else:
            pivots[k] = pivots[k + 1] = -(kp + 1)
        k += step
    return np.tril(a), pivots, info


def ldl_solve(ld: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^-1 B`` from ``ldl_factor``'s output (LAPACK's ``sytrs``, lower)."""
    b = np.array(b, copy=True)
    n = ld.shape[0]
    k = 0
    while k < n:  # L D Y = B
        if pivots[k] > 0:
            kp = pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1 :] -= np.outer(ld[k + 1 :, k], b[k])
            b[k] /= ld[k, k]
            k += 1
        else:
            kp = -pivots[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2 :] -= np.outer(ld[k + 2 :, k], b[k]) + np.outer(ld[k + 2 :, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T X = Y
        if pivots[k] > 0:
            b[k] -= ld[k + 1 :, k] @ b[k + 1 :]
            kp = pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= ld[k + 1 :, k] @ b[k + 1 :]
            b[k - 1] -= ld[k + 1 :, k - 1] @ b[k + 1 :]
            kp = -pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b
