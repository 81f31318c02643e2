"""Basic indexing, ``tensor[...]``: ints, slices with steps, ``None``, ``...`` and bools.

Each index becomes a view op (``select``, ``slice``, ``unsqueeze``), so the result shares storage
with the tensor and assignment through it (``t[1:, None] = 0``) writes the tensor. A bool index is
a mask in PyTorch, so reading with one copies (writing still goes through the view). More than one
``...`` is an IndexError, as in NumPy (PyTorch accepts it with results that depend on position). Indexing with
tensors or lists (advanced indexing) copies; it is not built yet and says so.
"""

from __future__ import annotations

import operator

from ember.core import dtypes as D
from ember.core.api import method
from ember.core.families.copying import copy_, fill_
from ember.core.families.views import select, slice_, unsqueeze
from ember.core.tensor import Tensor


def _scalar_tensor_index(item):
    """A 0-dim integer or bool tensor indexes as the number it holds, as in PyTorch."""
    if isinstance(item, Tensor) and item.ndim == 0 and item.dtype.category <= D.INTEGRAL:
        return item.item()
    return item


def apply_index(self: Tensor, index) -> tuple[Tensor, bool]:
    """The view ``self[index]`` selects, and whether a bool took part (which makes it a mask)."""
    items = index if type(index) is tuple else (index,)
    for item in items:
        if isinstance(item, Tensor):
            items = tuple(_scalar_tensor_index(i) for i in items)
            break
    consumed = ellipses = 0
    for item in items:
        if item is Ellipsis:
            ellipses += 1
        elif item is not None and not isinstance(item, bool):
            consumed += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
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
            step = 1 if item.step is None else operator.index(item.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start = None if item.start is None else operator.index(item.start)
            stop = None if item.stop is None else operator.index(item.stop)
            result = slice_(result, dim, start, stop, step)
            dim += 1
        elif isinstance(item, str):
            raise TypeError(f"invalid index of type 'str': {item!r}")
        elif isinstance(item, Tensor | list | tuple) or (hasattr(item, "__array__") and getattr(item, "ndim", 1) > 0):
            raise NotImplementedError(
                "indexing with tensors or lists (advanced indexing) is not supported yet; use ints, slices, None and ..."
            )
        else:
            try:
                i = operator.index(item)
            except TypeError:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                    f"(got {type(item).__name__})"
                ) from None
            size = result._shape[dim]
            if i < -size or i >= size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            result = select(result, dim, i)
    return (result if result is not self else _alias(self)), masked


def _alias(self: Tensor) -> Tensor:
    from ember.core.families.views import alias

    return alias(self)


@method("__getitem__")
def _getitem(self, index):
    result, masked = apply_index(self, index)
    if masked:
        # PyTorch treats a bool index as a one-element mask (advanced indexing): the result is a copy.
        from ember.core.families.copying import clone

        return clone(result)
    return result


@method("__setitem__")
def _setitem(self, index, value) -> None:
    target, masked = apply_index(self, index)
    if masked:
        # A bool index makes this PyTorch's index_put_: the value's dtype must match, and a False
        # mask selects nothing, so nothing is written (the version stays).
        if isinstance(value, Tensor) and value.dtype is not self.dtype:
            raise RuntimeError(
                "Index put requires the source and destination dtypes match, got "
                f"{D.SCALAR_TYPE_NAMES[self.dtype]} for the destination and {D.SCALAR_TYPE_NAMES[value.dtype]} for the source."
            )
        if target.numel() == 0:
            return
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise ValueError("Overflow when unpacking long long")  # PyTorch reads Python ints as int64 here
    if isinstance(value, Tensor):
        copy_(target, value)
    else:
        fill_(target, value)
