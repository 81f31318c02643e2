"""Decompositions of view ops into the core views (``permute``, ``squeeze.dims``, ``slice``,
``select``, ``alias``) and of ``tril``/``triu`` into a mask (see ``ember.core.aten.lowering``)."""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.aten.lowering import lowered
from ember.core.aten.shape import rearranging, views  # noqa: F401  (defines the ops)
from ember.core.dispatch import ops

aten = ops.aten


def _wrap(dim: int, ndim: int) -> int:
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-size}, {size - 1}], but got {dim})")
    return dim % size


@lowered(aten.detach.default)
def _detach(self):
    return aten.alias.default(self)


@lowered(aten.transpose.int)
def _transpose(self, dim0, dim1):
    if self.ndim == 0:  # dims 0 and -1 name the scalar itself
        _wrap(dim0, 0)
        _wrap(dim1, 0)
        return aten.alias.default(self)
    order = list(range(self.ndim))
    a, b = _wrap(dim0, self.ndim), _wrap(dim1, self.ndim)
    order[a], order[b] = order[b], order[a]
    return aten.permute.default(self, order)


@lowered(aten.t.default)
def _t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _transpose(self, 0, 1) if self.ndim == 2 else aten.alias.default(self)


@lowered(aten.squeeze.default)
def _squeeze(self):
    return aten.squeeze.dims(self, [d for d in range(self.ndim) if self.shape[d] == 1])


@lowered(aten.narrow.default)
def _narrow(self, dim, start, length):
    dim = _wrap(dim, self.ndim)
    size = self.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start + size if start < 0 else start
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return aten.slice.Tensor(self, dim, start, start + length)


@lowered(aten.unbind.int)
def _unbind(self, dim=0):
    dim = _wrap(dim, self.ndim)
    return [aten.select.int(self, dim, i) for i in range(self.shape[dim])]


@lowered(aten.split.Tensor)
def _split(self, split_size, dim=0):
    dim = _wrap(dim, self.ndim)
    size = self.shape[dim]
    if split_size < 0 or (split_size == 0 and size != 0):
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
    if size == 0:
        return [aten.alias.default(self)]
    return [aten.slice.Tensor(self, dim, start, min(start + split_size, size)) for start in range(0, size, split_size)]


def _triangle(self, diagonal, lower):
    if self.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 dimensions")
    rows, columns = self.shape[-2], self.shape[-1]
    row = aten.unsqueeze.default(aten.arange.start_step(0, rows, 1, dtype=D.int64, device=self.device), -1)
    column = aten.arange.start_step(0, columns, 1, dtype=D.int64, device=self.device)
    offset = column - row
    keep = offset <= diagonal if lower else offset >= diagonal
    return aten.where.self(keep, self, aten.full_like.default(self, 0))


lowered(aten.tril.default)(lambda self, diagonal=0: _triangle(self, diagonal, True))
lowered(aten.triu.default)(lambda self, diagonal=0: _triangle(self, diagonal, False))
