"""A tensor's sizes, strides and storage offset as ops.

Eager code reads them as attributes; a graph needs them as ops whose results are values in the
graph, because under symbolic shapes they are symbols computed from the inputs (``make_fx`` writes
``ember.ops.aten.sym_size.int(x, 0)`` for a size the program uses).
"""

from __future__ import annotations

from ember.core.dispatch import define
from ember.core.layout import normalize_dim

sym_size = define("sym_size.int(Tensor self, int dim) -> SymInt", ("core",))
sym_stride = define("sym_stride.int(Tensor self, int dim) -> SymInt", ("core",))
sym_numel = define("sym_numel(Tensor self) -> SymInt", ("core",))
sym_storage_offset = define("sym_storage_offset(Tensor self) -> SymInt", ("core",))


@sym_size.register_kernel("*")
def _sym_size(self, dim):
    return self._shape[normalize_dim(dim, len(self._shape))]


@sym_stride.register_kernel("*")
def _sym_stride(self, dim):
    return self._stride[normalize_dim(dim, len(self._shape))]


@sym_numel.register_kernel("*")
def _sym_numel(self):
    return self.numel()


@sym_storage_offset.register_kernel("*")
def _sym_storage_offset(self):
    return self._offset
