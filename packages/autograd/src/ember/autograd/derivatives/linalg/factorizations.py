"""Derivatives of the factorizations and solvers (``ember.core.aten.linalg.factorizations`` and
``solvers``). Inverses, solves and det take complex inputs too (``^H``, the conjugate transpose, is
``^T`` for real ones); the others are for real inputs.

- inverse: ``gA = -A^-H g A^-H``; solve ``X = A^-1 B``: ``gB = A^-H g``, ``gA = -gB X^H`` (mirrored
  for ``left=False``); the triangular solve keeps ``gA`` to the triangle it reads.
- det: ``g conj(det) A^-H``; slogdet: ``g_logabsdet A^-T`` (the sign is piecewise constant).
- Cholesky ``A = L L^T``: ``gA = L^-T Phi(L^T gL) L^-1`` symmetrized, ``Phi`` taking the lower
  triangle with half the diagonal.
- QR (``m >= n``, or the leading square block for wide inputs): ``gA = (gQ + Q copyltu(M)) R^-T``
  with ``M = R gR^T - gQ^T Q`` and ``copyltu`` mirroring the lower triangle to the upper.
- eigh: ``gA = V (diag(gL) + F o skew(V^T gV)) V^T`` with ``F_ij = 1 / (L_j - L_i)``, for distinct eigenvalues.
- matrix_exp: the upper-right block of ``exp([[A^T, g], [0, A^T]])``.
- LU of a square matrix, ``A = P L U``: ``gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T``.
- lstsq: through the pseudo-inverse, ``X = pinv(A) B``.
"""

from __future__ import annotations

from ember.autograd.derivatives.pointwise.pointwise_common import not_implemented
from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.aten.factories.factories import eye_function
from ember.core.aten.pointwise.ternary import where_function
from ember.core.aten.shape.joining import cat
from ember.core.dispatch import ops

aten = ops.aten


def _real_only(A, name: str) -> None:
    if A.dtype.category == D.COMPLEX:
        raise NotImplementedError(f"the derivative of {name} is not implemented for complex inputs")


def _diag(values):
    """Matrices with ``values`` (*, n) on the diagonal."""
    return values.unsqueeze(-1) * eye_function(values.shape[-1], dtype=values.dtype, device=values.device)


def _solve(A, B, left=True):
    return aten.linalg_solve_ex.default(A, B, left=left)[0]


def _tri(A, B, upper, left=True, unit=False):
    return aten.linalg_solve_triangular.default(A, B, upper=upper, left=left, unitriangular=unit)


# Forward-mode rules, written out (rather than transposed from the formulas below) so that forward
# over reverse differentiates the solves they call as plain ops.


def _inv_jvp(tangents, A, check_errors, result, **_):
    inverse = result[0]
    return -inverse.matmul(tangents[0]).matmul(inverse), None


def _solve_jvp(tangents, A, B, left, check_errors, result, **_):
    dA, dB = tangents
    X = result[0]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        X, dB = X.unsqueeze(-1), dB.unsqueeze(-1) if dB is not None else None
    rhs = dB
    if dA is not None:
        change = dA.matmul(X) if left else X.matmul(dA)
        rhs = -change if rhs is None else rhs - change
    dX = _solve(A, rhs, left=left)
    return (dX.squeeze(-1) if vector else dX), None


def _triangle(dA, upper, unitriangular):
    if upper:
        return dA.triu(1 if unitriangular else 0)
    return dA.tril(-1 if unitriangular else 0)


def _solve_triangular_jvp(tangents, self, B, upper, left, unitriangular, result, **_):
    dA, dB = tangents
    rhs = dB
    if dA is not None:
        part = _triangle(dA, upper, unitriangular)
        change = part.matmul(result) if left else result.matmul(part)
        rhs = -change if rhs is None else rhs - change
    return _tri(self, rhs, upper, left, unitriangular)


def _log_change(A, dA):
    """``trace(A^-1 dA)``: the change of log|det A|."""
    return (aten.linalg_inv_ex.default(A)[0].mT * dA).sum((-2, -1))


def _det_jvp(tangents, A, result, **_):
    return result * _log_change(A, tangents[0])


def _slogdet_jvp(tangents, A, result, **_):
    return None, _log_change(A, tangents[0])


@derivative(aten.linalg_inv_ex.default, save=("result",), output_differentiable=(True, False), jvp=_inv_jvp)
def _inv_ex(grads, A, check_errors, result, **_):
    g = grads[0]
    if g is None:
        return None
    inverse = result[0].mH
    return -inverse.matmul(g).matmul(inverse)


@derivative(aten.linalg_solve_ex.default, save=("A", "result"), output_differentiable=(True, False), jvp=_solve_jvp)
def _solve_ex(grads, A, B, left, check_errors, result, needs, **_):
    g = grads[0]
    if g is None:
        return None, None
    X = result[0]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        g, X = g.unsqueeze(-1), X.unsqueeze(-1)
    gB = _solve(A.mH, g, left=left)
    gA = None
    if needs[0]:
        gA = -gB.matmul(X.mH) if left else -X.mH.matmul(gB)
    if vector:
        gB = gB.squeeze(-1)
    return gA, (gB if needs[1] else None)


@derivative(aten.linalg_solve_triangular.default, save=("self", "result"), jvp=_solve_triangular_jvp)
def _solve_triangular(grad, self, B, upper, left, unitriangular, result, needs, **_):
    gB = _tri(self.mH, grad, not upper, left, unitriangular)
    gA = None
    if needs[0]:
        gA = -gB.matmul(result.mH) if left else -result.mH.matmul(gB)
        gA = gA.triu(1 if unitriangular else 0) if upper else gA.tril(-1 if unitriangular else 0)
    return gA, (gB if needs[1] else None)


@derivative(aten.linalg_det.default, save=("A", "result"), jvp=_det_jvp)
def _det(grad, A, result, **_):
    return (grad * result.conj()).unsqueeze(-1).unsqueeze(-1) * aten.linalg_inv_ex.default(A)[0].mH


@derivative(aten.linalg_slogdet.default, save=("A",), jvp=_slogdet_jvp)
def _slogdet(grads, A, **_):
    g = grads[1]
    if g is None:
        return None
    _real_only(A, "linalg.slogdet")
    return g.unsqueeze(-1).unsqueeze(-1) * aten.linalg_inv_ex.default(A)[0].mT


@derivative(aten.linalg_cholesky_ex.default, save=("result",), output_differentiable=(True, False))
def _cholesky_ex(grads, self, upper, check_errors, result, **_):
    g = grads[0]
    if g is None:
        return None
    _real_only(g, "linalg.cholesky")
    L = result[0]
    if upper:
        L, g = L.mT, g.mT
    phi = L.mT.matmul(g).tril()
    phi = phi - 0.5 * _diag(phi.diagonal(0, -2, -1))
    gA = _tri(L, _tri(L.mT, phi, upper=True), upper=False, left=False)
    return 0.5 * (gA + gA.mT)


def _copyltu(M):
    return M.tril(-1) + M.tril(-1).mT + _diag(M.diagonal(0, -2, -1))


def _qr_square_backward(gQ, gR, Q, R):
    """For ``m >= n``: the gradient through ``A = Q R`` with ``R`` square (n x n)."""
    M = R.matmul(gR.mT) - gQ.mT.matmul(Q)
    b = gQ + Q.matmul(_copyltu(M))
    return _tri(R.mT, b, upper=False, left=False)


@derivative(aten.linalg_qr.default, save=("result",))
def _linalg_qr(grads, A, mode, result, **_):
    gQ, gR = grads
    if gQ is None and gR is None:
        return None
    Q, R = result
    _real_only(R, "linalg.qr")
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
            "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
        )
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    gQ = gQ if gQ is not None else Q.new_zeros(tuple(Q.shape))
    gR = gR if gR is not None else R.new_zeros(tuple(R.shape))
    if m >= n:
        return _qr_square_backward(gQ, gR, Q, R)
    # Wide: A = Q [R1 R2] with R1 square; A's columns past m enter only R2 = Q^T Y.
    R1, gR1, gR2 = R[..., :, :m], gR[..., :, :m], gR[..., :, m:]
    Y = Q.matmul(R[..., :, m:])
    gX = _qr_square_backward(gQ + Y.matmul(gR2.mT), gR1, Q, R1)
    gY = Q.matmul(gR2)
    return cat([gX, gY], -1)


@derivative(aten._linalg_eigh.default, save=("result",))
def _linalg_eigh(grads, A, UPLO, compute_v, result, **_):
    gL, gV = grads
    if gL is None and gV is None:
        return None
    values, V = result
    if not compute_v:
        raise RuntimeError(
            "linalg.eigvalsh: the gradient needs the eigenvectors; they are computed when the input requires grad"
        )
    _real_only(V, "linalg.eigh")
    if gV is None:
        inner = _diag(gL)
    else:
        product = V.mT.matmul(gV)
        skew = 0.5 * (product - product.mT)
        n = values.shape[-1]
        eye = eye_function(n, dtype=D.bool_, device=values.device)
        gaps = where_function(eye, 1.0, values.unsqueeze(-2) - values.unsqueeze(-1))
        inner = where_function(eye, 0.0, skew / gaps)
        if gL is not None:
            inner = inner + _diag(gL)
    return V.matmul(inner).matmul(V.mT)


@derivative(aten.linalg_matrix_exp.default, save=("self",))
def _matrix_exp(grad, self, **_):
    _real_only(self, "linalg.matrix_exp")
    n = self.shape[-1]
    top = cat([self.mT, grad], -1)
    bottom = cat([self.new_zeros(tuple(self.shape)), self.mT], -1)
    return aten.linalg_matrix_exp.default(cat([top, bottom], -2))[..., :n, n:]


@derivative(aten.linalg_lu_factor_ex.default, save=("result",), output_differentiable=(True, False, False))
def _lu_factor_ex(grads, A, pivot, check_errors, result, **_):
    g = grads[0]
    if g is None:
        return None
    LU, pivots, _ = result
    _real_only(LU, "linalg.lu_factor")
    m, n = LU.shape[-2], LU.shape[-1]
    if m != n:
        raise NotImplementedError("the derivative of linalg.lu_factor is implemented for square matrices only")
    from ember.core.aten.linalg.linalg_functions import permutation_matrix

    eye = eye_function(n, dtype=LU.dtype, device=LU.device)
    lower = LU.tril(-1) + eye
    upper = LU.triu()
    inner = lower.mT.matmul(g.tril(-1)).tril(-1) + g.triu().matmul(upper.mT).triu()
    # gA = P L^-T inner U^-T
    left = _tri(lower.mT, inner, upper=True, unit=True)
    gA = _tri(upper.mT, left, upper=False, left=False)
    return permutation_matrix(pivots, n, LU.dtype).matmul(gA)


@derivative(aten.linalg_lstsq.default, save=("self", "b", "result"), output_differentiable=(True, True, False, False))
def _lstsq(grads, self, b, rcond, driver, result, needs, **_):
    g, g_residuals = grads[0], grads[1]
    if g is None and g_residuals is None:
        return None, None
    _real_only(self, "linalg.lstsq")
    from ember.core.aten.linalg.linalg_functions import pinv

    vector = b.ndim == self.ndim - 1
    X = result[0]
    if vector:
        b, X = b.unsqueeze(-1), X.unsqueeze(-1)
        g = g.unsqueeze(-1) if g is not None else None
    gA = gB = None
    if g is not None:
        pinv_A = pinv(self)
        gA = _pinv_backward(g.matmul(b.mT), pinv_A, self) if needs[0] else None
        gB = pinv_A.mT.matmul(g) if needs[1] else None
    if g_residuals is not None and result[1].numel():
        # A residual is a minimum over X: only its explicit dependence on A and B counts.
        weighted = 2 * (self.matmul(X) - b) * (g_residuals.unsqueeze(-1) if vector else g_residuals).unsqueeze(-2)
        gA = weighted.matmul(X.mT) if gA is None else gA + weighted.matmul(X.mT)
        gB = -weighted if gB is None else gB - weighted
    if vector and gB is not None:
        gB = gB.squeeze(-1)
    return gA, gB


def _pinv_backward(g, P, A):
    """The gradient of ``P = pinv(A)`` given ``g`` for ``P``, from the differential (Golub and Pereyra)
    ``dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P``."""
    eye_m = eye_function(A.shape[-2], dtype=A.dtype, device=A.device)
    eye_n = eye_function(A.shape[-1], dtype=A.dtype, device=A.device)
    Pt, gt = P.mT, g.mT
    return (
        -Pt.matmul(g).matmul(Pt)
        + (eye_m - A.matmul(P)).matmul(gt).matmul(P.matmul(Pt))
        + Pt.matmul(P).matmul(gt).matmul(eye_n - P.matmul(A))
    )


# PyTorch defines no derivative for these: backward through them raises, as PyTorch's does.
@derivative(aten.geqrf.default)
def _geqrf(grads, self, **_):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")  # PyTorch's words and type


@derivative(aten.linalg_ldl_factor_ex.default)
def _ldl_factor_ex(grads, self, **_):
    not_implemented("linalg_ldl_factor_ex")


@derivative(aten.linalg_ldl_solve.default)
def _ldl_solve(grads, LD, pivots, B, **_):
    not_implemented("linalg_ldl_solve")


@derivative(aten.linalg_eig.default)
def _linalg_eig(grads, self, **_):
    # Its eigenvectors are complex, and complex gradients need conj(), which Ember does not have.
    raise NotImplementedError("the derivative of linalg.eig is not implemented: it needs complex conjugation")
