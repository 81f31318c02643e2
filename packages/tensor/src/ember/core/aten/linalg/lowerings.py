"""Decompositions of the vector products into core ops (see ``ember.core.aten.lowering``)."""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.aten.linalg import matmul
from ember.core.aten.lowering import lowered
from ember.core.dispatch import ops

aten = ops.aten


def _wide(*tensors):
    """16-bit floats as float32, the precision the kernels accumulate in."""
    return [aten._to_copy.default(t, dtype=D.float32) if t.dtype in (D.float16, D.bfloat16) else t for t in tensors]


def _narrow(result, dtype):
    return aten._to_copy.default(result, dtype=dtype) if result.dtype is not dtype else result


@lowered(aten.dot.default)
def _dot(self, tensor):
    matmul._dot_plan(self, tensor, "dot")  # the kernel's argument checks, on metadata alone
    a, b = _wide(self, tensor)
    return _narrow(aten.sum.dim_IntList(a * b, [0]), self.dtype)


@lowered(aten.vdot.default)
def _vdot(self, other):
    matmul._dot_plan(self, other, "vdot")
    a, b = _wide(self, other)
    if a.dtype.category == D.COMPLEX:
        a = aten.conj_physical.default(a)
    return _narrow(aten.sum.dim_IntList(a * b, [0]), self.dtype)


@lowered(aten.mv.default)
def _mv(self, vec):
    return aten.squeeze.dims(aten.mm.default(self, aten.unsqueeze.default(vec, 1)), [1])


@lowered(aten.baddbmm.default)
def _baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
    dtype = self.dtype
    self, batch1, batch2 = _wide(self, batch1, batch2)
    return _narrow(_baddbmm_wide(self, batch1, batch2, beta, alpha), dtype)


def _baddbmm_wide(self, batch1, batch2, beta, alpha):
    product = aten.bmm.default(batch1, batch2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product  # self is ignored, NaN included; it broadcasts to the product's shape
    return product + (self if beta == 1 else self * beta)
