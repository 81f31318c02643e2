"""Ops that give a tensor a geometry from elsewhere: ``slice_inverse`` (a view of ``self`` laid out as
``src``), ``as_strided_``, and ``resize_``/``resize_as_`` with the deprecated out-of-place
``Tensor.resize``/``resize_as``.

``resize_`` keeps the storage offset and lays the new sizes out contiguously (or in the memory
format asked for), as PyTorch does. Growing is where Ember differs: a CPU storage is a NumPy buffer
that views, ``.numpy()`` arrays and DLPack consumers may hold, and a buffer cannot grow under them;
reallocating would silently detach them all. So a resize that needs more bytes than the storage has
raises a ``RuntimeError`` that says so; shrinking, reshaping to the same element count and growing
within the storage's bytes (after an earlier shrink) behave as in PyTorch. Meta tensors hold no
bytes, so on the meta device the storage grows freely.
"""

from __future__ import annotations

import warnings

from ember.core.api import method, public
from ember.core.aten.lowering import lowered
from ember.core.aten.shape.views import _take_geometry, as_strided
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.memory_formats import LAYOUT_FORMATS, memory_format_of, memory_format_strides
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor, _array_view

slice_inverse = define(
    "slice_inverse(Tensor(a) self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
    "-> Tensor(a)",
    ("view",),
)
resize_ = define("resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)")
resize_as_ = define(
    "resize_as_(Tensor(a!) self, Tensor the_template, *, MemoryFormat? memory_format=None) -> Tensor(a!)"
)


@slice_inverse.register_kernel("*")
def _slice_inverse(self: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    # ``self`` is a slice of a tensor laid out as ``src``: the inverse reads ``self``'s storage in that layout.
    return as_strided.kernel("*")(self, src._shape, src._stride, src._offset)


@lowered(slice_inverse)
def _slice_inverse_lowered(self, src, dim=0, start=None, end=None, step=1):
    return as_strided(self, list(src.shape), list(src.stride()), src.storage_offset())


# -- resizing ------------------------------------------------------------------------------------------


def _format_strides(shape: tuple, memory_format, template: Tensor | None = None) -> tuple:
    if memory_format is None:
        memory_format = "contiguous_format"
    elif memory_format == "preserve_format":
        if template is None:
            raise RuntimeError("Unsupported memory formatPreserve")
        memory_format = memory_format_of(template._shape, template._stride)
    if memory_format not in LAYOUT_FORMATS:
        raise RuntimeError(f"Unsupported memory format {memory_format}")
    rank = {"channels_last": 4, "channels_last_3d": 5}.get(str(memory_format))
    if rank is not None and len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format} format")
    return memory_format_strides(shape, str(memory_format))


def _resize_geometry(self: Tensor, shape: tuple, stride: tuple) -> Tensor:
    storage = self._storage
    needed = (self._offset + numel(shape)) * self.dtype.itemsize if numel(shape) else 0
    if needed > storage.nbytes:
        if storage.data is not None:
            raise RuntimeError(
                f"resize_: Ember cannot grow a tensor's storage in place (from {storage.nbytes} to {needed} bytes): "
                "its bytes are a NumPy buffer that views and arrays of this tensor may share, and it cannot be "
                "reallocated under them. Make a new tensor instead (ember.empty(size), then copy_ what you keep)."
            )
        storage.nbytes = needed  # a meta storage has no bytes to move
    self._shape, self._stride, self._contig = shape, stride, None
    self._array = _array_view(storage, shape, stride, self._offset, self.dtype)
    storage.version += 1
    return self


def _sizes(size) -> tuple:
    shape = tuple(size)
    for n in shape:
        if not isinstance(n, INT_LIKE):
            raise TypeError(f"resize_(): argument 'size' must be a tuple of ints, but found element of type {type(n)}")
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    return shape


@resize_.register_kernel("*")
def _resize(self: Tensor, size, *, memory_format=None) -> Tensor:
    shape = _sizes(size)
    return _resize_geometry(self, shape, _format_strides(shape, memory_format))


@resize_as_.register_kernel("*")
def _resize_as(self: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    shape = tuple(the_template._shape)
    return _resize_geometry(self, shape, _format_strides(shape, memory_format, the_template))


def _refuse_grad(self: Tensor) -> None:
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")


@method("resize_")
def _resize_method(self: Tensor, *size, memory_format=None) -> Tensor:
    """Give this tensor ``size`` (contiguous, from its storage offset), within its storage's bytes."""
    _refuse_grad(self)
    if len(size) == 1 and isinstance(size[0], list | tuple):
        size = tuple(size[0])
    return resize_(self, list(size), memory_format=memory_format)


@public("resize_as_")
@method("resize_as_")
def _resize_as_method(input: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """``resize_`` to ``the_template``'s size."""
    _refuse_grad(input)
    return resize_as_(input, the_template, memory_format=memory_format)


def _reshaped(self: Tensor, sizes: tuple, what: str) -> Tensor:
    warnings.warn(f"non-inplace {what} is deprecated", stacklevel=3)
    count = numel(sizes)
    if count != self.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({count} elements in total), but the given tensor has "
            f"a size of {'x'.join(map(str, self._shape))} ({self.numel()} elements). autograd's resize can only "
            "change the shape of a given tensor, while preserving the number of elements. "
        )
    return self.contiguous().view(sizes)


@method("resize")
def _resize_out_of_place(self: Tensor, *sizes) -> Tensor:
    """The deprecated out-of-place resize: a reshape that keeps the element count (differentiable)."""
    if len(sizes) == 1 and isinstance(sizes[0], list | tuple):
        sizes = tuple(sizes[0])
    return _reshaped(self, tuple(sizes), "resize")


@method("resize_as")
def _resize_as_out_of_place(self: Tensor, tensor: Tensor) -> Tensor:
    """The deprecated out-of-place ``resize_as``: ``resize`` to ``tensor``'s size."""
    return _reshaped(self, tuple(tensor._shape), "resize_as")


# -- as_strided_ and slice_inverse's surface -------------------------------------------------------------


@public("as_strided_")
@method("as_strided_")
def _as_strided_inplace(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """Make this tensor the strided view ``as_strided(size, stride, storage_offset)`` of its storage."""
    view = as_strided(input, size, stride, storage_offset)
    _take_geometry(input, view)
    input._offset = view._offset
    return input


@public("slice_inverse")
@method("slice_inverse")
def _slice_inverse_function(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """A view of ``input``'s storage laid out as ``src`` (``input`` being a slice of a tensor like ``src``)."""
    return slice_inverse(input, src, dim, start, end, step)
