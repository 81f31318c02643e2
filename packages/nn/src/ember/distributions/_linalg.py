"""The few dense linear-algebra routines the matrix distributions need (Cholesky factor, triangular solve),
written as column loops of core ops so that autograd differentiates them. Sizes here are event sizes
(small), so a loop over columns costs little."""

from __future__ import annotations

from ember.core.tensor import Tensor

from ._ember import ember


def cholesky(a: Tensor) -> Tensor:
    """Lower Cholesky factor of a batch of symmetric positive-definite matrices."""
    n = a.shape[-1]
    cols: list[Tensor] = []
    for j in range(n):
        if j:
            prev = ember.stack(cols, dim=-1)  # (..., n, j)
            s = a[..., :, j] - (prev * prev[..., j : j + 1, :]).sum(-1)
        else:
            s = a[..., :, j]
        d = s[..., j : j + 1].sqrt()
        col = s / d
        mask = ember.arange(n, device=a.device) >= j
        cols.append(ember.where(mask, col, ember.zeros_like(col)))
    return ember.stack(cols, dim=-1)


def solve_triangular_lower(L: Tensor, b: Tensor) -> Tensor:
    """x with L x = b, L lower triangular (..., n, n), b (..., n, k)."""
    n = L.shape[-1]
    L, b = _broadcast_batch(L, b)
    rows: list[Tensor] = []
    for i in range(n):
        r = b[..., i, :]
        if i:
            prev = ember.stack(rows, dim=-2)  # (..., i, k)
            r = r - (L[..., i, :i].unsqueeze(-1) * prev).sum(-2)
        rows.append(r / L[..., i, i : i + 1])
    return ember.stack(rows, dim=-2)


def solve_triangular_upper(U: Tensor, b: Tensor) -> Tensor:
    """x with U x = b, U upper triangular."""
    n = U.shape[-1]
    U, b = _broadcast_batch(U, b)
    rows: list[Tensor | None] = [None] * n
    for i in reversed(range(n)):
        r = b[..., i, :]
        if i < n - 1:
            later = ember.stack(rows[i + 1 :], dim=-2)  # type: ignore[arg-type]
            r = r - (U[..., i, i + 1 :].unsqueeze(-1) * later).sum(-2)
        rows[i] = r / U[..., i, i : i + 1]
    return ember.stack(rows, dim=-2)  # type: ignore[arg-type]


def cholesky_inverse(L: Tensor) -> Tensor:
    eye = ember.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(L.shape)
    linv = solve_triangular_lower(L, eye)
    return linv.mT @ linv


def _broadcast_batch(A: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    batch = ember.broadcast_shapes(A.shape[:-2], b.shape[:-2])
    return A.expand(batch + A.shape[-2:]), b.expand(batch + b.shape[-2:])


def diag_embed(x: Tensor) -> Tensor:
    """Square matrices with ``x`` (..., n) on the diagonal."""
    n = x.shape[-1]
    return x.unsqueeze(-1) * ember.eye(n, dtype=x.dtype, device=x.device)
