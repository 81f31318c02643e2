"""The derivative of the SVD (``ember.core.aten.linalg.svd``), for distinct singular values.

With only the singular values wanted (``svdvals``, nuclear norms) the gradient is
``U @ diag(gS) @ Vh``. Through U and Vh, the classic result: with ``F_ij = 1 / (S_j^2 - S_i^2)``,
``gA = U [F o skew(U^H gU) S + S F o skew(V^H gV) + diag(gS)] V^H`` plus, for a tall A, the part of
``gU S^-1`` outside U's span (for a wide A, of ``S^-1 gVh`` outside V's). The extra columns of U and
rows of Vh that ``full_matrices=True`` adds are arbitrary, so their gradients are left out, as in
PyTorch. Complex inputs are supported for the singular values only: through the vectors the
gradient also needs the phase terms, which are not written.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.aten.factories.factories import eye_function
from ember.core.aten.pointwise.ternary import where_function
from ember.core.dispatch import ops

aten = ops.aten


def _skew(x):
    return x - x.mT


def svd_backward(gU, gS, gVh, U, S, Vh):
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    if gU is None and gVh is None:
        gS = gS.to(U.dtype)
        return U.matmul(gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)).matmul(Vh)
    if U.dtype.category == D.COMPLEX:
        raise NotImplementedError("the derivative of _linalg_svd through U or Vh is not implemented for complex inputs")
    U, Vh = U[..., :k], Vh[..., :k, :]
    gU = gU[..., :k] if gU is not None else None
    gVh = gVh[..., :k, :] if gVh is not None else None
    eye = eye_function(k, dtype=D.bool_, device=S.device)
    squares = S * S
    E = where_function(eye, 1.0, squares.unsqueeze(-2) - squares.unsqueeze(-1))
    if gU is not None and gVh is not None:
        inner = (_skew(U.mT.matmul(gU)) * S.unsqueeze(-2) + S.unsqueeze(-1) * _skew(Vh.matmul(gVh.mT))) / E
    elif gU is not None:
        inner = (_skew(U.mT.matmul(gU)) / E) * S.unsqueeze(-2)
    else:
        inner = S.unsqueeze(-1) * (_skew(Vh.matmul(gVh.mT)) / E)
    if gS is not None:
        inner = inner + where_function(eye, gS.unsqueeze(-2), 0.0)
    if m > k and gU is not None:
        scaled = gU / S.unsqueeze(-2)
        outer = U.matmul(inner) + scaled - U.matmul(U.mT.matmul(scaled))
        return outer.matmul(Vh)
    if n > k and gVh is not None:
        scaled = gVh / S.unsqueeze(-1)
        outer = inner.matmul(Vh) + scaled - scaled.matmul(Vh.mT).matmul(Vh)
        return U.matmul(outer)
    return U.matmul(inner.matmul(Vh)) if m >= n else U.matmul(inner).matmul(Vh)


@derivative(aten._linalg_svd.default, save=("result",))
def _linalg_svd(grads, A, full_matrices, compute_uv, result, **_):
    gU, gS, gVh = grads
    if gU is None and gS is None and gVh is None:
        return None
    if not compute_uv:
        raise RuntimeError(
            "_linalg_svd: the gradient needs the singular vectors; call it with compute_uv=True "
            "(linalg.svdvals does so when its input requires grad)"
        )
    U, S, Vh = result
    return svd_backward(gU, gS, gVh, U, S, Vh)
