"""Turning samples into batches: ``default_collate`` (used when the loader batches) and
``default_convert`` (used when it does not).

``collate`` dispatches on the type of the batch's first sample through a table from type to
function, so a caller can extend it: ``collate(batch, collate_fn_map={MyType: fn, **default_collate_fn_map})``.
Types missing from the table fall through to the containers (mappings, namedtuples, sequences),
which are collated field by field. The table is tried by exact type first, then by ``isinstance``
in insertion order; that order is why ``bool`` samples meet the ``int`` rule and give a bool
tensor, as in PyTorch.

PyTorch stacks batches into shared memory inside worker processes; Ember's workers send batches
back by pickling them, so there is no such special case here.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.shape.joining import _stack_function as stack_function
from ember.core.creation import as_tensor, tensor
from ember.core.tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

# numpy dtype kinds with no tensor equivalent: bytes, strings, unicode and Python objects.
_STRING_OR_OBJECT = re.compile(r"[SaUO]")

_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"

CollateMap = dict[type | tuple[type, ...], Callable]


def _is_numpy_value(data: Any) -> bool:
    cls = type(data)
    return cls.__module__ == "numpy" and cls.__name__ not in ("str_", "string_")


def default_convert(data: Any) -> Any:
    """numpy arrays and scalars inside ``data`` become tensors; containers are rebuilt around them;
    anything else (tensors included) is returned as is. Tuples come back as lists."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(default_convert(item) for item in data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str | bytes):
        return _rebuild_sequence(data, [default_convert(item) for item in data])
    return data


def _rebuild_mapping(original: collections.abc.Mapping, values: dict) -> Any:
    """A mapping of ``original``'s type holding ``values``; a plain dict if the type cannot be
    rebuilt. A mutable mapping is copied and updated so that attributes of subclasses survive."""
    try:
        if isinstance(original, collections.abc.MutableMapping):
            clone = copy.copy(original)
            clone.update(values)
            return clone
        return type(original)(values)
    except TypeError:
        return values


def _rebuild_sequence(original: collections.abc.Sequence, values: list) -> Any:
    """Like ``_rebuild_mapping`` for sequences; a plain list when the type cannot be rebuilt
    (``range``, for one)."""
    try:
        if isinstance(original, collections.abc.MutableSequence):
            clone = copy.copy(original)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(original)(values)
    except TypeError:
        return values


def collate(batch: list, *, collate_fn_map: CollateMap | None = None) -> Any:
    """Collate ``batch`` (a list of samples) by the rule ``collate_fn_map`` gives the first
    sample's type, else field by field through mappings, namedtuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    def inner(samples) -> Any:
        # ``samples`` is a list for mappings and a tuple from zip otherwise; strings come back in it.
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: inner([sample[key] for sample in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(inner(field) for field in zip(*batch, strict=False)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [inner(field) for field in zip(*batch, strict=False)]
        if isinstance(elem, tuple):
            return fields  # PyTorch returns a list for tuples, and scripts index it either way
        return _rebuild_sequence(elem, fields)
    raise TypeError(_ERROR.format(elem_type))


def collate_tensor_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return stack_function(batch, 0)


def collate_numpy_array_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Any:
    if _STRING_OR_OBJECT.search(batch[0].dtype.str):
        raise TypeError(_ERROR.format(batch[0].dtype))
    return collate([as_tensor(array) for array in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return as_tensor(batch)


def collate_float_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(batch, dtype=D.float64)


def collate_int_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(batch)


def collate_str_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> list:
    return batch


default_collate_fn_map: CollateMap = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch: tensors and numpy arrays are stacked along a new first
    dimension, Python floats become a float64 tensor and ints an int64 one, strings stay a list,
    and containers are collated field by field.

    >>> default_collate([(0, "a"), (1, "b")])
    [tensor([0, 1]), ['a', 'b']]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
