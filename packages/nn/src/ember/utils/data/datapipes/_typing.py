"""Types of DataPipes: ``IterDataPipe[int]`` names a DataPipe class whose items are ints.

A DataPipe class carries ``type``, a ``_DataPipeType`` around a type hint (``Any`` unless the
class was subscripted or derives from a subscripted class). ``issubtype`` relates two hints
(unions, and generic containers argument by argument) and ``issubinstance`` checks a value against
a hint, looking inside lists, tuples, sets and dicts; ``argument_validation`` and
``runtime_validation`` use them.
"""

from __future__ import annotations

import abc
import collections.abc
import types
import typing
from typing import Any, Union


def _origin(hint):
    origin = typing.get_origin(hint)
    return hint if origin is None else origin


def _union_members(hint) -> tuple | None:
    if typing.get_origin(hint) in (Union, types.UnionType):
        return typing.get_args(hint)
    return None


def issubtype(left, right) -> bool:
    """Whether every value of hint ``left`` is a value of hint ``right``."""
    if right is Any or left == right:
        return True
    members = _union_members(right)
    if members is not None:
        return (
            any(issubtype(left, m) for m in members)
            if _union_members(left) is None
            else all(issubtype(m, right) for m in _union_members(left))
        )
    members = _union_members(left)
    if members is not None:
        return all(issubtype(m, right) for m in members)
    if left is Any:
        return False
    left_origin, right_origin = _origin(left), _origin(right)
    if not (isinstance(left_origin, type) and isinstance(right_origin, type)):
        return False
    if not issubclass(left_origin, right_origin):
        return False
    right_args = typing.get_args(right)
    if not right_args:
        return True
    left_args = typing.get_args(left)
    if not left_args or len(left_args) != len(right_args):
        return all(a is Any for a in right_args)
    return all(issubtype(a, b) for a, b in zip(left_args, right_args, strict=True))


def issubinstance(data, hint) -> bool:
    """Whether the value ``data`` belongs to hint ``hint``."""
    if hint is Any:
        return True
    members = _union_members(hint)
    if members is not None:
        return any(issubinstance(data, m) for m in members)
    origin, args = _origin(hint), typing.get_args(hint)
    if not isinstance(origin, type) or not isinstance(data, origin):
        return False
    if not args:
        return True
    if isinstance(data, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return all(issubinstance(d, args[0]) for d in data)
        return len(args) == len(data) and all(issubinstance(d, a) for d, a in zip(data, args, strict=True))
    if isinstance(data, collections.abc.Mapping):
        key, value = args
        return all(issubinstance(k, key) and issubinstance(v, value) for k, v in data.items())
    if isinstance(data, collections.abc.Iterable) and len(args) == 1:
        return all(issubinstance(d, args[0]) for d in data)
    return True


def _type_repr(hint) -> str:
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return "typing.Any" if hint is Any else hint.__qualname__
    return repr(hint)


class _DataPipeType:
    """The item type of a DataPipe."""

    def __init__(self, param) -> None:
        self.param = param

    def __repr__(self) -> str:
        return _type_repr(self.param)

    def __eq__(self, other) -> bool:
        return isinstance(other, _DataPipeType) and self.param == other.param

    def __hash__(self) -> int:
        return hash(self.param)

    def issubtype(self, other: _DataPipeType) -> bool:
        if isinstance(other, _DataPipeType):
            return issubtype(self.param, other.param)
        if isinstance(other, type):
            return issubtype(self.param, other)
        raise TypeError(f"Expected '_DataPipeType' or 'type', but found {type(other)}")

    def issubtype_of_instance(self, other) -> bool:
        return issubinstance(other, self.param)


class _DataPipeMeta(abc.ABCMeta):
    """The metaclass of DataPipe classes: ``Cls[T]`` makes the subclass whose items are ``T``."""

    type: _DataPipeType

    def __getitem__(cls, param):
        if param is None:
            raise TypeError(f"{cls.__name__}[t]: t can not be None")
        if isinstance(param, str):
            param = typing.ForwardRef(param)
        if isinstance(param, tuple):
            param = tuple[param]
        if not cls.type.param == Any and not issubtype(param, cls.type.param):
            raise TypeError(f"Cannot subscript {cls} with {param}: not a subtype of {cls.type}")
        name = f"{cls.__name__}[{_type_repr(param)}]"
        return cls.__class__(name, (cls,), {"__module__": cls.__module__, "type": _DataPipeType(param)})
