"""``infer_schema``: an op schema from a Python function's type hints, as ``torch.library`` infers it.

Hints are reduced to a canonical form first (``Optional[X]``, ``X | None`` and ``Union[X, None]``
are one thing; ``list``, ``List``, ``Sequence`` and ``collections.abc.Sequence`` of X are one
thing), then looked up: ``Tensor``, ``Tensor?``, ``Tensor[]``, ``Tensor?[]``, ``SymInt`` for
``int``, ``float``, ``bool``, ``str``, ``Scalar`` for ``int | float | bool``, ``ScalarType``,
``Device``, with ``?`` and ``[]`` forms where PyTorch has them. An argument named in
``mutates_args`` gets the alias annotation ``Tensor(a<i>!)``, ``i`` being its position.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing

from ember.core.devices import device
from ember.core.dtypes import dtype
from ember.core.tensor import Tensor

_SCALAR = ("union", frozenset({int, float, bool}))
_NONE = type(None)
_BASE = {
    Tensor: "Tensor",
    int: "SymInt",
    float: "float",
    bool: "bool",
    str: "str",
    dtype: "ScalarType",
    device: "Device",
}
_OPTIONAL_OK = {Tensor, int, float, bool, str, dtype, device, _SCALAR}
_LISTS = {Tensor: "Tensor[]", ("optional", Tensor): "Tensor?[]", int: "SymInt[]", float: "float[]", bool: "bool[]"}
_LISTS[_SCALAR] = "Scalar[]"
_RETURNS = {
    Tensor: "Tensor",
    ("list", Tensor): "Tensor[]",
    int: "SymInt",
    float: "float",
    bool: "bool",
    _SCALAR: "Scalar",
}


def _canon(hint):
    """A hashable canonical form of a type hint."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = frozenset(_canon(a) for a in typing.get_args(hint))
        if _NONE in members:
            rest = members - {_NONE}
            inner = next(iter(rest)) if len(rest) == 1 else ("union", rest)
            return ("optional", inner)
        return ("union", members)
    if origin in (list, collections.abc.Sequence):
        args = typing.get_args(hint)
        if len(args) != 1:
            return ("unsupported", hint)
        return ("list" if origin is list else "seq", _canon(args[0]))
    if origin is tuple:
        return ("tuple", tuple(_canon(a) for a in typing.get_args(hint)))
    if hint is None:
        return _NONE
    return hint


def _argument_type(hint) -> str | None:
    key = _canon(hint)
    if key in _BASE:
        return _BASE[key]
    if key == _SCALAR:
        return "Scalar"
    if isinstance(key, tuple) and key[0] == "optional":
        inner = key[1]
        if inner in _OPTIONAL_OK:
            return ("Scalar" if inner == _SCALAR else _BASE[inner]) + "?"
        if isinstance(inner, tuple) and inner[0] in ("list", "seq") and inner[1] in (int, float, bool):
            return _LISTS[inner[1]] + "?"
        return None
    if isinstance(key, tuple) and key[0] in ("list", "seq"):
        return _LISTS.get(key[1])
    return None


def _return_type(hint) -> str | None:
    key = _canon(hint)
    if key in _RETURNS:
        return _RETURNS[key]
    if isinstance(key, tuple) and key[0] == "tuple":
        parts = [_RETURNS.get(k) for k in key[1]]
        if parts and all(parts):
            return "(" + ", ".join(parts) + ")"
    return None


def _default(value, name: str, signature) -> str:
    if value is None or isinstance(value, bool | int | float):
        return repr(value) if not isinstance(value, float) else repr(float(value))
    if isinstance(value, str):
        return f'"{value}"'
    raise ValueError(
        f"infer_schema(func): Parameter {name} has an unsupported default value {value!r}. Got func with signature {signature})"
    )


def _hints(fn) -> inspect.Signature:
    try:
        return inspect.signature(fn, eval_str=True)
    except (NameError, TypeError, SyntaxError) as error:
        raise ValueError(f"infer_schema(func): could not resolve the type hints of {fn!r}: {error}") from None


def infer_schema(prototype_function, /, *, mutates_args, op_name: str | None = None) -> str:
    """The schema string of ``prototype_function`` (``"(Tensor x, SymInt n) -> Tensor"``)."""
    sig = _hints(prototype_function)

    def error(what: str) -> ValueError:
        return ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    params = list(sig.parameters.values())
    names = [p.name for p in params]
    if mutates_args == "unknown":
        mutated = None
    else:
        if isinstance(mutates_args, str) or not isinstance(mutates_args, collections.abc.Iterable):
            raise ValueError("mutates_args must be a sequence of argument names or the string 'unknown'")
        mutated = set(mutates_args)
        missing = mutated - set(names)
        if missing:
            raise error(
                f"{missing} in mutates_args were not found in the custom op's signature. mutates_args should "
                "contain the names of all args that the custom op mutates, or just the string 'unknown' if you "
                "don't know."
            )
    parts, star = [], False
    for index, p in enumerate(params):
        if p.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            raise error("We do not support positional-only args, varargs, or varkwargs.")
        if p.annotation is inspect.Parameter.empty:
            raise error(f"Parameter {p.name} must have a type annotation.")
        if typing.get_origin(p.annotation) is tuple:
            raise error(
                f"Parameter {p.name} has unsupported type {p.annotation}. We do not support Tuple inputs in schema. "
                "As a workaround, please try to use List instead. For example, list[int]."
            )
        schema_type = _argument_type(p.annotation)
        if schema_type is None:
            raise error(f"Parameter {p.name} has unsupported type {p.annotation}.")
        if mutated is None or p.name in mutated:
            if schema_type.startswith("Tensor"):
                schema_type = f"Tensor(a{index}!){schema_type[len('Tensor') :]}"
            elif mutated is not None:
                raise error(
                    f"Parameter {p.name} is in mutable_args but only Tensors or collections of Tensors can be mutated"
                )
        if p.kind == inspect.Parameter.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = f"{schema_type} {p.name}"
        if p.default is not inspect.Parameter.empty:
            text += "=" + _default(p.default, p.name, sig)
        parts.append(text)
    if sig.return_annotation is inspect.Signature.empty:
        raise error("No return type annotation was provided. Please add one.")
    if sig.return_annotation is None or sig.return_annotation is _NONE:
        ret = "()"
    else:
        ret = _return_type(sig.return_annotation)
        if ret is None:
            raise error(f"Return has unsupported type {sig.return_annotation}.")
    return f"{op_name or ''}({', '.join(parts)}) -> {ret}"
