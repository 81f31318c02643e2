"""Decompositions of the index ops into ``index``, ``index_put``, ``scatter_reduce`` and ``where``
(see ``ember.core.aten.lowering``)."""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.aten.indexing import index_forms, index_ops, masking, scatter_gather  # noqa: F401  (the ops)
from ember.core.aten.lowering import lowered
from ember.core.dispatch import ops

aten = ops.aten


def _scalar(value, like):
    """A 0-d tensor of ``like``'s dtype holding ``value``."""
    return aten.full.default([], value, dtype=like.dtype, device=like.device)


@lowered(aten.masked_fill.Scalar)
def _masked_fill(self, mask, value):
    masking._check_fill(mask, value)
    return aten.where.self(mask, _scalar(value, self), self)


@lowered(aten.masked_fill.Tensor)
def _masked_fill_tensor(self, mask, value):
    masking._check_fill(mask, value)
    return aten.where.self(mask, aten._to_copy.default(value, dtype=self.dtype), self)


def _flat(t):
    return aten.reshape.default(t, [-1])


@lowered(aten.take.default)
def _take(self, index):
    return aten.index.Tensor(_flat(self), [index])


@lowered(aten.put.default)
def _put(self, index, source, accumulate=False):
    flat = aten.index_put.default(_flat(self), [_flat(index)], _flat(source), accumulate)
    return aten.view.default(flat, list(self.shape))


def _along(self, dim: int, index):
    """The indices of ``index_put`` selecting ``index`` along ``dim``."""
    dim = dim % max(self.ndim, 1)
    return [None] * dim + [_flat(index)]


@lowered(aten.index_copy.default)
def _index_copy(self, dim, index, source):
    if self.ndim == 0:
        return aten.index_put.default(self, [_flat(index)], aten.reshape.default(source, [-1]))
    return aten.index_put.default(self, _along(self, dim, index), source)


@lowered(aten.index_add.default)
def _index_add(self, dim, index, source, *, alpha=1):
    if self.dtype in (D.float16, D.bfloat16):  # accumulated in float32, as the kernel does
        wide = _index_add(
            aten._to_copy.default(self, dtype=D.float32),
            dim,
            index,
            aten._to_copy.default(source, dtype=D.float32),
            alpha=alpha,
        )
        return aten._to_copy.default(wide, dtype=self.dtype)
    if alpha != 1:
        source = source * alpha
    if self.ndim == 0:
        return aten.index_put.default(self, [_flat(index)], aten.reshape.default(source, [-1]), True)
    return aten.index_put.default(self, _along(self, dim, index), source, True)


@lowered(aten.index_fill.int_Scalar)
def _index_fill(self, dim, index, value):
    if self.ndim == 0:
        return aten.index_put.default(self, [_flat(index)], _scalar(value, self))
    return aten.index_put.default(self, _along(self, dim, index), _scalar(value, self))


@lowered(aten.index_fill.int_Tensor)
def _index_fill_tensor(self, dim, index, value):
    if value.ndim != 0:
        raise RuntimeError(
            f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s)."
        )
    indices = _along(self, dim, index) if self.ndim else [_flat(index)]
    return aten.index_put.default(self, indices, aten._to_copy.default(value, dtype=self.dtype))


_REDUCTIONS = {"add": "sum", "multiply": "prod"}


def _scatter_reduction(reduce: str) -> str:
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
    return _REDUCTIONS[reduce]


@lowered(aten.scatter.reduce)
def _scatter_reduce(self, dim, index, src, *, reduce):
    return aten.scatter_reduce.two(self, dim, index, src, _scatter_reduction(reduce))


@lowered(aten.scatter.value_reduce)
def _scatter_value_reduce(self, dim, index, value, *, reduce):
    src = aten.full.default(list(index.shape), value, dtype=self.dtype, device=self.device)
    return aten.scatter_reduce.two(self, dim, index, src, _scatter_reduction(reduce))


@lowered(aten.nonzero_numpy.default)
def _nonzero_numpy(self):
    found = aten.nonzero.default(self)
    return [aten.select.int(found, 1, i) for i in range(found.shape[1])]
