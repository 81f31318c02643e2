"""The gradient of ``as_strided``: through storage positions, for any strides.

An ``as_strided`` output may read one storage element several times (overlapping strides, stride
0) and skip others (gaps); its input may be laid out the same ways. The gradient therefore goes
through the storage: each output element's gradient is added at the storage position it read, and
each input element takes the gradient found at its own position, divided by the number of input
elements sharing that position (they all alias one value, so the gradient is spread evenly, as
PyTorch does). Positions outside the input get nothing.

Geometry is ``(sizes, strides, storage_offset)`` in elements, absolute within the storage.
"""

from __future__ import annotations

from ember.core.aten.factories.factories import arange_function, full_function, ones_function, zeros_function
from ember.core.tensor import Tensor


def _positions(size: tuple, stride: tuple, offset: int, device) -> Tensor:
    """The storage position of every element of the geometry, in row-major order, as int64."""
    from ember.core import dtypes as D

    pos = full_function((), offset, dtype=D.int64, device=device)
    ndim = len(size)
    for d, (n, s) in enumerate(zip(size, stride, strict=True)):
        shape = [1] * ndim
        shape[d] = n
        pos = pos + (arange_function(n, dtype=D.int64, device=device) * s).reshape(shape)
    return pos.expand(size).reshape(-1)


def _extent(size: tuple, stride: tuple, offset: int) -> int:
    return offset + 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True))


def _numel(size: tuple) -> int:
    n = 1
    for s in size:
        n *= s
    return n


def as_strided_backward(grad: Tensor, input_geometry: tuple, output_geometry: tuple) -> Tensor:
    """The gradient of the input of ``as_strided(input, *output_geometry)`` given ``grad`` of its output."""
    in_size, in_stride, in_offset = (tuple(g) if i < 2 else g for i, g in enumerate(input_geometry))
    out_size, out_stride, out_offset = (tuple(g) if i < 2 else g for i, g in enumerate(output_geometry))
    if _numel(in_size) == 0 or _numel(out_size) == 0:
        return zeros_function(in_size, dtype=grad.dtype, device=grad.device)
    low = min(in_offset, out_offset)
    length = max(_extent(in_size, in_stride, in_offset), _extent(out_size, out_stride, out_offset)) - low
    storage = zeros_function((length,), dtype=grad.dtype, device=grad.device)
    if overlaps(out_size, out_stride):
        where = _positions(out_size, out_stride, out_offset - low, grad.device)
        storage = storage.index_add(0, where, grad.reshape(-1))
    else:  # each position read at most once: a copy, without building the positions
        storage.as_strided(out_size, out_stride, out_offset - low).copy_(grad)
    if overlaps(in_size, in_stride):
        readers = _positions(in_size, in_stride, in_offset - low, grad.device)
        count = zeros_function((length,), dtype=grad.dtype, device=grad.device)
        count = count.index_add(0, readers, ones_function(readers.shape, dtype=grad.dtype, device=grad.device))
        storage = storage / count.clamp_min(1)
    return storage.as_strided(in_size, in_stride, in_offset - low)


def overlaps(size: tuple, stride: tuple) -> bool:
    """Whether two elements of the geometry may share a storage position (cheap; may say yes wrongly)."""
    dims = sorted((s, n) for n, s in zip(size, stride, strict=True) if n > 1)
    reach = 0  # the largest offset reachable with the smaller strides
    for s, n in dims:
        if s <= reach:
            return True
        reach += (n - 1) * s
    return False


def overlaps_exactly(size: tuple, stride: tuple) -> bool:
    """Whether two elements of the geometry share a storage position, counting them where in doubt."""
    if not overlaps(size, stride):
        return False
    import numpy as np

    positions = np.zeros((), np.int64)
    for n, st in zip(size, stride, strict=True):
        positions = np.add.outer(positions, np.arange(n, dtype=np.int64) * st)
    return np.unique(positions).size != positions.size
