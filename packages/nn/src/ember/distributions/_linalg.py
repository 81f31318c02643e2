"""The linear algebra the matrix distributions use, under the names their modules import: the core's
``ember.linalg`` routines (LAPACK-backed, with their derivatives and batching rules)."""

from __future__ import annotations

from ember.core.tensor import Tensor

from ._ember import ember


def cholesky(a: Tensor) -> Tensor:
    """Lower Cholesky factor of a batch of symmetric positive-definite matrices."""
    return ember.linalg.cholesky(a)


def solve_triangular_lower(L: Tensor, b: Tensor) -> Tensor:
    """x with L x = b, L lower triangular (..., n, n), b (..., n, k); batch dims broadcast."""
    return ember.linalg.solve_triangular(L, b, upper=False)


def cholesky_inverse(L: Tensor) -> Tensor:
    return ember.cholesky_inverse(L)


def diag_embed(x: Tensor) -> Tensor:
    """Square matrices with ``x`` (..., n) on the diagonal."""
    return ember.diag_embed(x)


def solve_triangular_upper(U: Tensor, b: Tensor) -> Tensor:
    """x with U x = b, U upper triangular; batch dims broadcast."""
    return ember.linalg.solve_triangular(U, b, upper=True)
