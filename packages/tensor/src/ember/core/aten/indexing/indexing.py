"""Indexing, ``tensor[...]`` and ``tensor[...] = value``, as PyTorch's Python binding does it.

Basic indices (ints, slices with steps, ``None``, ``...``) become view ops (``select``, ``slice``,
``unsqueeze``), so the result shares storage with the tensor and assignment through it
(``t[1:, None] = 0``) writes the tensor. More than one ``...`` is an IndexError, as in NumPy.

Tensors, lists, NumPy arrays and bools are advanced indices: the basic ones are applied as views
first (an int is a ``select``, so it never counts as an advanced index, unlike NumPy), then what is
left goes to aten ``index`` (reading, a copy) or ``index_put_`` (writing), in
``aten/indexing/advanced_indexing.py``. A bool adds a dimension indexed by ``[0]`` (True) or ``[]``
(False); bools broadcast together. A list holding sequences, slices, tensors, None or ``...`` counts
as a tuple, as PyTorch still does (with its deprecation warning). The basic path runs first and hands
over (``_AdvancedIndex``) on meeting an advanced item, so purely basic indexing pays nothing for it.
"""

from __future__ import annotations

import numbers
import operator
import warnings

import numpy as np

from ember.core import dtypes as D
from ember.core.api import method
from ember.core.aten.indexing.advanced_indexing import index as index_op
from ember.core.aten.indexing.advanced_indexing import index_put_
from ember.core.aten.shape.copying import checked_scalar, copy_, fill_
from ember.core.aten.shape.views import select, slice_, unsqueeze
from ember.core.fastpath import native
from ember.core.symbolic import SymInt
from ember.core.tensor import Tensor, from_array


def _scalar_tensor_index(item):
    """A 0-dim integer or bool tensor indexes as the number it holds, as in PyTorch."""
    if isinstance(item, Tensor) and item.ndim == 0 and item.dtype.category <= D.INTEGRAL:
        return item.item()
    return item


def _slice_dim(result: Tensor, dim: int, item: slice) -> Tensor:
    """``result`` sliced along ``dim`` by a Python slice, as a view (negative steps are PyTorch's ValueError)."""
    step = 1 if item.step is None else operator.index(item.step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = None if item.start is None else _bound(item.start)
    stop = None if item.stop is None else _bound(item.stop)
    return slice_(result, dim, start, stop, step)


def _bound(value):
    """A slice bound as an int; a symbolic int stays symbolic (slice_ takes it), not fixed to its value."""
    return value if isinstance(value, SymInt) else operator.index(value)


def apply_index(self: Tensor, index) -> tuple[Tensor, bool]:
    """The view ``self[index]`` selects, and whether a bool took part (which makes it a mask)."""
    items = index if type(index) is tuple else (index,)
    for item in items:
        if isinstance(item, Tensor):
            items = tuple(_scalar_tensor_index(i) for i in items)
            break
    consumed = 0
    for item in items:
        if item is not None and item is not Ellipsis and not isinstance(item, bool):
            consumed += 1
    # Several ellipses are allowed, as in PyTorch: each stands for the dimensions no other item takes.
    if consumed > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    result, dim, masked = self, 0, False
    for item in items:
        if item is None:
            result = unsqueeze(result, dim)
            dim += 1
        elif item is Ellipsis:
            dim += self.ndim - consumed
        elif isinstance(item, bool):
            masked = True
            result = unsqueeze(result, dim)
            if not item:
                result = slice_(result, dim, 0, 0, 1)
            dim += 1
        elif type(item) is slice:
            if item.start is None and item.stop is None and item.step is None:
                dim += 1
                continue
            result = _slice_dim(result, dim, item)
            dim += 1
        elif isinstance(item, str):
            raise TypeError(f"invalid index of type 'str': {item!r}")
        else:
            if type(item) is int:
                i = item
            elif _advanced_item(item):
                raise _AdvancedIndex  # the caller starts over on the advanced path; basic indexing pays nothing
            else:
                try:
                    i = operator.index(item)
                except TypeError:
                    raise IndexError(
                        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                        f"indices (got {type(item).__name__})"
                    ) from None
            # past the last dimension only when several ellipses each took the free dimensions
            size = result._shape[dim] if dim < result.ndim else 0
            if i < -size or i >= size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            result = select(result, dim, i)
    return (result if result is not self else _alias(self)), masked


class _AdvancedIndex(Exception):
    """Raised by ``apply_index`` on meeting a tensor, list or array index."""


def _alias(self: Tensor) -> Tensor:
    from ember.core.aten.shape.views import alias

    return alias(self)


# Ints, slices and None on a tensor the dispatcher's fast path would take, as one view, in C;
# None for anything else.
_c_getitem = native.getitem if native is not None else None


@method("__getitem__")
def _getitem(self, index):
    if _c_getitem is not None and (out := _c_getitem(self, index)) is not None:
        return out
    try:
        result, masked = apply_index(self, index)
    except _AdvancedIndex:
        result, indices = _split(self, _as_items(index))
        return index_op(result, indices)
    if masked:
        # A bool is an advanced index ([0] or []): bools broadcast together and the result is a copy.
        result, indices = _split(self, _as_items(index))
        return index_op(result, indices)
    return result


@method("__setitem__")
def _setitem(self, index, value) -> None:
    try:
        target, masked = apply_index(self, index)
    except _AdvancedIndex:
        target, indices = _split(self, _as_items(index))
        index_put_(target, indices, _value_tensor(value, target))
        return
    if masked:
        # A lone Python bool is PyTorch's shortcut: False writes nothing (the version stays), True copies
        # into the unsqueezed tensor. Any other index holding a bool is index_put_ (bools broadcast together).
        if type(index) is not bool:
            target, indices = _split(self, _as_items(index))
            index_put_(target, indices, _value_tensor(value, target))
            return
        if not index:
            return
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise ValueError("Overflow when unpacking long long")  # PyTorch reads Python ints as int64 here
    if isinstance(value, Tensor):
        copy_(target, value)
    else:
        fill_(target, value)


# -- advanced indexing ----------------------------------------------------------------------------


def _advanced_item(item) -> bool:
    if isinstance(item, Tensor):
        return item.ndim > 0
    return isinstance(item, list | tuple | range) or (isinstance(item, np.ndarray) and item.ndim > 0)


def _sequence_item(item) -> bool:
    return isinstance(item, Tensor | list | tuple | range | slice) or item is None or item is Ellipsis


def _as_items(index) -> tuple:
    """The index as a tuple of items (PyTorch's ``treatSequenceAsTuple`` for a top-level list)."""
    if type(index) is tuple:
        return index
    if isinstance(index, list) and len(index) < 32 and any(_sequence_item(i) for i in index):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
            "pytorch 2.9; use x[tuple(seq)] instead of x[seq].",
            UserWarning,
            stacklevel=3,
        )
        return tuple(index)
    return (index,)


def _without_ranges(item):
    """Nested ranges as lists: PyTorch indexes with ``range(n)`` as with ``list(range(n))``."""
    if isinstance(item, range):
        return list(item)
    if isinstance(item, list | tuple) and any(isinstance(i, list | tuple | range) for i in item):
        return [_without_ranges(i) for i in item]
    return item


def _index_tensor(item, device) -> Tensor:
    """A list or NumPy array as the tensor PyTorch makes of it (an empty list indexes as int64)."""
    if isinstance(item, Tensor):
        return item
    from ember.core.creation import tensor

    if isinstance(item, np.ndarray):
        result = tensor(item)
    else:
        result = tensor(_without_ranges(item))
        if result.numel() == 0 and result.dtype.category == D.FLOATING:
            result = result.to(D.int64)
    return result


def _split(self: Tensor, items: tuple) -> tuple[Tensor, list]:
    """Apply the basic items as views; the view and the per-dimension index list aten ``index`` takes."""
    items = tuple(_scalar_tensor_index(i) for i in items)
    items = tuple(_index_tensor(i, self.device) if _advanced_item(i) else i for i in items)
    specified = 0
    for item in items:
        if item is Ellipsis:
            continue
        if isinstance(item, Tensor):
            specified += item.ndim if item.dtype in (D.bool_, D.uint8) else 1
        elif item is not None and not isinstance(item, bool):
            specified += 1
    if specified > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    result, dim, indices = self, 0, []

    def record(t: Tensor, span: int) -> None:
        nonlocal dim
        indices.extend([None] * (dim - len(indices)))
        indices.append(t)
        dim += span

    for item in items:
        if item is None:
            result = unsqueeze(result, dim)
            dim += 1
        elif item is Ellipsis:
            dim += self.ndim - specified
        elif isinstance(item, bool):
            result = unsqueeze(result, dim)
            record(from_array(np.zeros(1 if item else 0, np.int64)), 1)
        elif isinstance(item, Tensor):
            record(item, item.ndim if item.dtype in (D.bool_, D.uint8) else 1)
        elif type(item) is slice:
            if not (item.start is None and item.stop is None and item.step is None):
                result = _slice_dim(result, dim, item)
            dim += 1
        elif isinstance(item, str):
            raise TypeError(f"invalid index of type 'str': {item!r}")
        else:
            try:
                i = operator.index(item)
            except TypeError:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                    f"(got {type(item).__name__})"
                ) from None
            # past the last dimension only when several ellipses each took the free dimensions
            size = result._shape[dim] if dim < result.ndim else 0
            if i < -size or i >= size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            result = select(result, dim, i)
    return result, indices


def _value_tensor(value, target: Tensor) -> Tensor:
    """The value of ``t[index] = value`` as a tensor: a number in the tensor's dtype; a tensor's leading
    size-1 dimensions dropped, as PyTorch's binding does before ``index_put_``."""
    if isinstance(value, Tensor):
        shape = value._shape
        while shape and shape[0] == 1:
            shape = shape[1:]
        return value if shape == value._shape else value.view(shape)
    if not isinstance(value, numbers.Number):
        raise TypeError(f"can't assign a {type(value).__name__} to a tensor of dtype {target.dtype}")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        raise OverflowError("int too big to convert")
    if target.device.type == "meta":
        from ember.core.creation import tensor

        return tensor(0, dtype=target.dtype, device="meta")
    return from_array(np.asarray(checked_scalar(value, target.dtype), target.dtype.np), target.dtype)
