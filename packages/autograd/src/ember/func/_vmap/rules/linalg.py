"""Linear algebra: matrix products and matrix decompositions.

Products: the batch becomes (or joins) the leading batch dims of ``matmul``.

``matmul`` broadcasts leading dims, so a batched operand with its batch at dim 0 multiplies an
unbatched one lane by lane, and two batched ones pair lane with lane. Vectors that are batched get a
trailing size-1 dim where ``matmul`` would otherwise read them as matrices.

Decompositions: the batch joins the leading batch dims the op already handles. ``_linalg_svd``
factors every matrix of ``(*, m, n)`` on its own, so a batch at dim 0 is one more leading dim.
Without ``compute_uv`` its U and Vh are empty 1-dim tensors, which carry no batch: each lane gets an
empty one.
"""

from __future__ import annotations

from ember.func._vmap.common import aten, check_inplace, pad_to
from ember.func._vmap.table import register


def _matmul(a, b):
    return aten.matmul.default(a, b)


def _mm(call):
    a, b = call.args[:2]
    for name, t in (("self", a), ("mat2", b)):
        n = t.ndim - (1 if call.batched(t) else 0)
        if n != 2:
            raise RuntimeError(f"{name} must be a matrix")
    return _matmul(a, b)


def _bmm(call):
    a, b = call.args[:2]
    for t in (a, b):
        n = t.ndim - (1 if call.batched(t) else 0)
        if n != 3:
            raise RuntimeError(f"batch1 must be a 3D tensor, got {n}D")
    return _matmul(a, b)


def _mv(call):
    a, v = call.args[:2]
    if call.batched(v):
        return _matmul(a, v.unsqueeze(-1)).squeeze(-1)
    return _matmul(a, v)


def _dot(call):
    a, b = call.args[:2]
    if call.op is aten.vdot.default and a.is_complex():
        raise RuntimeError("vmap: vdot of complex tensors needs conj, which ember does not have yet")
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found {a.dtype.name.capitalize()} and "
            f"{b.dtype.name.capitalize()}"
        )
    if call.batched(a) and call.batched(b):
        return _matmul(a.unsqueeze(1), b.unsqueeze(2)).reshape((call.size,))
    if call.batched(a):
        return _matmul(a, b)
    return _matmul(b, a)


def _addmm(call):
    """``beta * self + alpha * (mat1 @ mat2)``; ``self`` is ignored when ``beta`` is 0, as in PyTorch."""
    check_inplace(call)
    self, m1, m2 = call.args[:3]
    beta, alpha = call.kwargs.get("beta", 1), call.kwargs.get("alpha", 1)
    product = _matmul(m1, m2)
    if alpha != 1:
        product = product * alpha
    batched_product = call.batched(m1) or call.batched(m2)
    if beta == 0:
        out = product if batched_product else product.unsqueeze(0).expand((call.size, *tuple(product.shape)))
    else:
        rank = product.ndim - (1 if batched_product else 0)
        base = pad_to(call, self, rank) if call.batched(self) else self
        out = (base * beta if beta != 1 else base) + product
    if call.op.schema.is_inplace:
        self.copy_(out)
        return None
    return out


register(_mm, aten.mm.default)
register(_bmm, aten.bmm.default)
register(_mv, aten.mv.default)
register(_dot, aten.dot.default, aten.vdot.default)
register(_addmm, aten.addmm.default, aten.addmm_.default, aten.baddbmm.default, aten.baddbmm_.default)


def _linalg_svd(call):
    if call.args[0].ndim - 1 < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    U, S, Vh = call.op(*call.args, **call.kwargs)
    if U.ndim == 1:
        U, Vh = U.new_empty((call.size, 0)), Vh.new_empty((call.size, 0))
    return U, S, Vh


register(_linalg_svd, aten._linalg_svd.default)
