"""What a captured graph assumed about its frame: guards, checked before each reuse."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ember.dynamo.source import Source


class GuardKind(enum.Enum):
    TYPE_MATCH = "type"  # type(value) is guard.value
    ID_MATCH = "id"  # id(value) == guard.value (modules, functions, classes held by identity)
    EQUALS_MATCH = "equals"  # value == guard.value, for Python constants (and type(value) is type(guard.value))
    NONE_MATCH = "none"  # value is None (guard.value True) or is not None (False)
    TENSOR_MATCH = "tensor"  # guard.value: TensorSpec
    LENGTH_MATCH = "length"  # len(value) == guard.value (lists, tuples, dicts)
    DICT_KEYS = "dict_keys"  # list(value.keys()) == guard.value (a tuple of keys, in order)
    HASATTR = "hasattr"  # hasattr(base, name) is guard.value; source: AttrSource
    GRAD_MODE = "grad_mode"  # ember.is_grad_enabled() is guard.value; source None
    AUTOCAST = "autocast"  # the autocast state equals guard.value; source None
    DEFAULT_DTYPE = "default_dtype"  # ember.get_default_dtype() is guard.value; source None


@dataclass(frozen=True)
class TensorSpec:
    """What a graph assumed of one input tensor. A size or stride of None is dynamic (symbolic:
    its relations are shape guards, not part of the spec)."""

    type: type
    dtype: Any
    device: Any
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...]
    requires_grad: bool


@dataclass(frozen=True)
class Guard:
    source: Source | None  # None for the global state (grad mode, autocast, default dtype)
    kind: GuardKind
    value: Any = None
