"""Randomized low-rank factorizations: ``ember.svd_lowrank`` and ``ember.pca_lowrank``.

Both follow Halko, Martinsson and Tropp (2009), as PyTorch's do: a Gaussian test matrix (drawn with
``ember.randn``, so ``ember.manual_seed`` makes a run repeatable) sampled through ``A``, ``niter``
rounds of subspace iteration with a QR after each product, then the SVD of the small projected
matrix ``Q^H A`` (Algorithms 4.4 and 5.1). A wide matrix is factored through its conjugate
transpose. ``M`` (broadcast to ``A``'s size) is subtracted from every product rather than from
``A``, so a sparse ``A`` stays sparse; ``pca_lowrank`` centers a dense ``A`` directly and a sparse
one through such an ``M`` of column means. Every step is an Ember op, so gradients flow through it.
Ember's random stream is not PyTorch's, so the factors match PyTorch's to the accuracy of the
method, not bit for bit.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.api import functions, public
from ember.core.aten.linalg.linalg_functions import qr
from ember.core.aten.linalg.svd import svd
from ember.core.tensor import Tensor


def floating_dtype(A: Tensor) -> D.dtype:
    """PyTorch's rule for these algorithms: float16/32/64 are kept, anything else computes in float32."""
    return A.dtype if A.dtype in (D.float16, D.float32, D.float64) else D.float32


def is_sparse(A: Tensor | None) -> bool:
    return A is not None and bool(getattr(A, "is_sparse", False))


def matmul(A: Tensor | None, B: Tensor) -> Tensor:
    """``A @ B`` for a dense or sparse ``A`` (None stands for the identity)."""
    if A is None:
        return B
    if is_sparse(A):
        from ember.core.sparse.api import sparse_mm

        return sparse_mm(A, B)
    return A.matmul(B)


def _basis(X: Tensor) -> Tensor:
    return qr(X).Q


def approximate_basis(A: Tensor, q: int, niter: int | None = 2, M: Tensor | None = None) -> Tensor:
    """``q`` orthonormal columns ``Q`` with ``Q Q^H (A - M)`` close to ``A - M``."""
    niter = 2 if niter is None else niter
    dtype = A.dtype if A.is_complex() else floating_dtype(A)
    test = functions["randn"](A.shape[-1], q, dtype=dtype, device=A.device)
    X = matmul(A, test)
    if M is not None:
        X = X - matmul(M, test)
    Q = _basis(X)
    for _ in range(niter):
        X = matmul(A.mH, Q)
        if M is not None:
            X = X - matmul(M.mH, Q)
        Q = _basis(X)
        X = matmul(A, Q)
        if M is not None:
            X = X - matmul(M, Q)
        Q = _basis(X)
    return Q


def _svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    wide = m < n
    if wide:
        A = A.mH
        if M is not None:
            M = M.mH
    Q = approximate_basis(A, q, niter=niter, M=M)
    B = Q.mH.matmul(A)
    if M is not None:
        B = B - matmul(Q.mH, M)
    U, S, Vh = svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if wide:
        U, V = V, U
    return U, S, V


@public("svd_lowrank")
def svd_lowrank(
    A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` with ``A - M ~ U diag(S) V^H``: a rank-``q`` randomized SVD of a matrix, a batch of
    matrices or a sparse matrix."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


@public("pca_lowrank")
def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """Principal components of the rows of ``A`` (centered unless ``center=False``) as ``(U, S, V)``:
    ``V``'s columns are the principal directions, ``S**2 / (m - 1)`` the variances along them."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    dtype = floating_dtype(A)
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    if is_sparse(A):
        if len(A.shape) != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        from ember.core.sparse.api import sparse_sum

        # The column means as a dense (1, n) row, repeated (a stride-0 view) for every row of A.
        means = sparse_sum(A, dim=(-2,)).to_dense().to(dtype) / m
        M = means.reshape(1, n).expand(m, n)
        return _svd_lowrank(A, q, niter=niter, M=M)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter=niter, M=None)
