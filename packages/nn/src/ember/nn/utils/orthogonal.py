"""``parametrizations.orthogonal``'s parametrization, with the two maps it needs composed from
matrix products (so autograd differentiates them without linear-algebra kernels):

- the matrix exponential of the skew-symmetric part, by scaling and squaring a Taylor series
  (degree 18 on a matrix scaled to norm at most 1/2: exact to rounding in float64);
- the product of Householder reflectors ``H_1 ... H_k`` (``linalg.householder_product``), applied
  one reflector at a time.

With ``use_trivialization`` (the default) the original is the matrix PyTorch stores (minus the
identity at first) and ``base`` (an orthogonal matrix, from NumPy's QR with positive ``R`` diagonal
under ``no_grad``) multiplies the map's result, as in PyTorch. ``cayley`` needs a linear solve the
core does not have and raises.
"""

from __future__ import annotations

import math

import numpy as np

from ember.autograd import no_grad
from ember.core.aten.factories.factories import eye_function
from ember.core.aten.shape.joining import cat
from ember.core.creation import tensor as make_tensor
from ember.core.tensor import Tensor
from ember.nn.modules.module import Module

__all__ = ["householder_product", "matrix_exp"]


def matrix_exp(a: Tensor) -> Tensor:
    """``exp(a)`` of a (batch of) square matrices, by scaling and squaring."""
    with no_grad():
        norm = float(a.abs().sum(-2).amax()) if a.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    scaled = a / (2**squarings)
    identity = eye_function(a.shape[-1], dtype=a.dtype, device=a.device).expand(a.shape)
    result, term = identity, identity
    for i in range(1, 19):
        term = term.matmul(scaled) / i
        result = result + term
    for _ in range(squarings):
        result = result.matmul(result)
    return result


def householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """The first ``k`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T`` with ``v_i`` the
    ``i``-th column of ``a`` below the diagonal and a unit on it."""
    n, k = a.shape[-2], a.shape[-1]
    q = eye_function(n, dtype=a.dtype, device=a.device)[:, :k].expand(*a.shape[:-2], n, k)
    rows = np.arange(n)
    for i in range(k - 1, -1, -1):
        below = make_tensor((rows > i).astype(np.float64), dtype=a.dtype, device=a.device)
        unit = make_tensor((rows == i).astype(np.float64), dtype=a.dtype, device=a.device)
        v = (a[..., :, i] * below + unit).unsqueeze(-1)
        q = q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * v.matmul(v.transpose(-2, -1).matmul(q))
    return q


def _make_orthogonal(a: Tensor) -> Tensor:
    """The ``Q`` of ``a = QR`` (``a`` tall) with ``R``'s diagonal non-negative."""
    values = np.asarray(a.detach().numpy(), dtype=np.float64)
    q, r = np.linalg.qr(values)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    signs[signs == 0] = 1
    return make_tensor(q * signs[..., None, :], dtype=a.dtype, device=a.device)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(np.dtype(str(q.dtype).split(".")[-1])).eps)
    gram = np.asarray(q.detach().numpy()).swapaxes(-2, -1) @ np.asarray(q.detach().numpy())
    return bool(np.allclose(gram, np.eye(k), atol=eps, rtol=1e-5))


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros((*x.shape[:-2], n, n - k))], -1)
            a = x - x.transpose(-2, -1)
            if self.orthogonal_map == "cayley":
                raise NotImplementedError(
                    "orthogonal_map='cayley' needs linalg.solve, which ember.linalg does not have yet"
                )
            q = matrix_exp(a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = householder_product(a, tau)
            q = q * x.diagonal(0, -2, -1).int().unsqueeze(-2).to(q.dtype)
        if hasattr(self, "base"):
            q = self.base.matmul(q)
        return q.transpose(-2, -1) if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            if tuple(q.shape) != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape {tuple(q.shape)}."
                )
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.transpose(-2, -1)
                n, k = k, n
            if not hasattr(self, "base"):
                raise NotImplementedError(
                    "orthogonal(use_trivialization=False) needs linalg.geqrf, which ember.linalg does not have yet"
                )
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:
                extra = q.new_empty((*q.shape[:-2], n, n - k)).normal_()
                q = _make_orthogonal(cat([q, extra], -1))
            self.base = q
            neg_identity = q_init.new_zeros(q_init.shape)
            neg_identity.diagonal(0, -2, -1).fill_(-1.0)
            return neg_identity
