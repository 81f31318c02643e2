"""Op schemas in PyTorch's native-function syntax, parsed into data.

    add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
    max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)

An alias annotation ``(a)`` says the value shares storage with others marked ``a``; ``(a!)`` says the
op also writes to it. Functionalization and AOT autograd read these; the dispatcher does not.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_TYPE = re.compile(
    r"(?P<base>[A-Za-z]+)(?P<alias>\([a-z][a-z0-9]*!?(?: -> \*)?\))?(?P<opt1>\?)?(?P<list>\[\d*\])?(?P<opt2>\?)?"
)
# A name may carry its namespace (``aten::add``), as PyTorch's parsed schemas keep it; the op table's
# schemas are written without one.
_NAME = re.compile(r"(?P<name>(?:[a-z_][a-z0-9_]*::)?[a-z_][a-z0-9_]*)(?:\.(?P<overload>[A-Za-z0-9_]+))?")
BASE_TYPES = frozenset(
    {"Tensor", "Scalar", "int", "SymInt", "float", "bool", "str", "ScalarType", "Device", "Layout"}
    | {"MemoryFormat", "Generator", "Dimname", "Storage", "Any"}
)


@dataclass(frozen=True)
class AliasInfo:
    set: str
    is_write: bool
    to_wildcard: bool = False

    # PyTorch's names: the alias sets before and after the op (``Tensor(a -> *)`` joins the wildcard).
    @property
    def before_set(self) -> set[str]:
        return {self.set}

    @property
    def after_set(self) -> set[str]:
        return {"*"} if self.to_wildcard else {self.set}


@dataclass(frozen=True)
class SchemaType:
    base: str
    optional: bool = False
    is_list: bool = False
    list_size: int | None = None
    elem_optional: bool = False  # Tensor?[]

    def __str__(self) -> str:
        text = self.base + ("?" if self.elem_optional else "")
        if self.is_list:
            text += f"[{self.list_size or ''}]"
        return text + ("?" if self.optional else "")


_NO_DEFAULT = object()


@dataclass(frozen=True)
class Argument:
    name: str
    type: SchemaType
    default: object = _NO_DEFAULT
    kwarg_only: bool = False
    alias: AliasInfo | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def is_write(self) -> bool:
        return self.alias is not None and self.alias.is_write

    # -- PyTorch's names for the same ----------------------------------------------------------

    @property
    def default_value(self) -> object:
        return self.default if self.has_default else None

    def has_default_value(self) -> bool:
        return self.has_default

    @property
    def alias_info(self) -> AliasInfo | None:
        return self.alias

    @property
    def N(self) -> int | None:  # PyTorch's name
        return self.type.list_size

    @property
    def is_out(self) -> bool:
        return self.kwarg_only and self.is_write

    @property
    def real_type(self) -> SchemaType:
        return self.type


@dataclass(frozen=True)
class FunctionSchema:
    name: str
    overload: str
    arguments: tuple[Argument, ...]
    returns: tuple[Argument, ...]

    @property
    def qualified(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def overload_name(self) -> str:  # PyTorch's name
        return self.overload

    @property
    def is_mutable(self) -> bool:
        return any(a.is_write for a in self.arguments)

    @property
    def is_inplace(self) -> bool:
        return self.name.endswith("_") and bool(self.arguments) and self.arguments[0].is_write

    @property
    def is_out(self) -> bool:
        return any(a.is_write and a.kwarg_only for a in self.arguments)

    def __str__(self) -> str:
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(_format_argument(a, with_default=True))
        rets = [_format_argument(r, with_default=False) for r in self.returns]
        ret = rets[0] if len(rets) == 1 and not self.returns[0].name else f"({', '.join(rets)})"
        return f"{self.qualified}({', '.join(parts)}) -> {ret}"


def _format_type(t: SchemaType, alias: AliasInfo | None) -> str:
    text = str(t)
    if alias is not None:
        mark = f"({alias.set}{'!' if alias.is_write else ''}{' -> *' if alias.to_wildcard else ''})"
        # The alias goes right after the base type name.
        text = t.base + mark + text[len(t.base) :]
    return text


def _format_argument(a: Argument, with_default: bool) -> str:
    text = _format_type(a.type, a.alias)
    if a.name:
        text += f" {a.name}"
    if with_default and a.has_default:
        text += f"={_format_default(a.default)}"
    return text


def _format_default(value: object) -> str:
    if isinstance(value, str):
        # Bare words are enum-like defaults (``contiguous_format``); anything else is a quoted string.
        return value if re.fullmatch(r"[A-Za-z_]+", value) and value not in ("mean", "sum", "none") else f'"{value}"'
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


def parse_schema(text: str) -> FunctionSchema:
    try:
        name_part, rest = text.split("(", 1)
        depth, close = 1, -1
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                close = i
                break
        if close < 0:
            raise ValueError("unbalanced parentheses")
        args_part, ret = rest[:close], rest[close + 1 :].strip()
        if not ret.startswith("->"):
            raise ValueError("missing '->'")
        match = _NAME.fullmatch(name_part.strip())
        if match is None:
            raise ValueError(f"bad op name {name_part!r}")
        arguments = _parse_arguments(args_part)
        returns = _parse_returns(ret[2:].strip())
    except ValueError as error:
        raise ValueError(f"cannot parse schema {text!r}: {error}") from None
    return FunctionSchema(match["name"], match["overload"] or "", arguments, returns)


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


def _parse_type(text: str) -> tuple[SchemaType, AliasInfo | None]:
    match = _TYPE.fullmatch(text)
    if match is None or match["base"] not in BASE_TYPES:
        raise ValueError(f"unknown type {text!r}")
    alias = None
    if match["alias"]:
        inner = match["alias"][1:-1]
        to_wildcard = inner.endswith(" -> *")
        inner = inner.removesuffix(" -> *")
        alias = AliasInfo(inner.rstrip("!"), inner.endswith("!"), to_wildcard)
    is_list = match["list"] is not None
    size = int(match["list"][1:-1]) if is_list and match["list"] != "[]" else None
    if is_list:
        return SchemaType(match["base"], bool(match["opt2"]), True, size, bool(match["opt1"])), alias
    return SchemaType(match["base"], bool(match["opt1"] or match["opt2"])), alias


def _parse_default(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if re.fullmatch(r"[A-Za-z_]+", text):  # enum-like defaults: contiguous_format, long
            return text
        raise ValueError(f"bad default {text!r}") from None


def _parse_arguments(text: str) -> tuple[Argument, ...]:
    arguments, kwarg_only, names, defaulted = [], False, set(), False
    for part in _split_top_level(text):
        if part == "*":
            if kwarg_only:
                raise ValueError("'*' appears twice")
            kwarg_only = True
            continue
        decl, has_default, default = part.partition("=")
        if has_default and not default.strip():
            raise ValueError(f"argument {part!r} has '=' but no default")
        type_text, _, name = decl.strip().rpartition(" ")
        if not name.isidentifier() or not type_text:
            raise ValueError(f"bad argument {part!r}")
        if name in names:
            raise ValueError(f"argument {name!r} appears twice")
        names.add(name)
        schema_type, alias = _parse_type(type_text.strip())
        value = _parse_default(default.strip()) if has_default else _NO_DEFAULT
        if not kwarg_only:
            # As in Python, a positional argument without a default cannot follow one with a default.
            if defaulted and not has_default:
                raise ValueError(f"argument {name!r} without a default follows one with a default")
            defaulted = defaulted or bool(has_default)
        arguments.append(Argument(name, schema_type, value, kwarg_only, alias))
    return tuple(arguments)


def _parse_returns(text: str) -> tuple[Argument, ...]:
    if text.startswith("(") and text.endswith(")"):
        parts = _split_top_level(text[1:-1])
    else:
        parts = [text]
    returns = []
    for part in parts:
        type_text, _, name = part.rpartition(" ")
        if not type_text:
            type_text, name = part, ""
        schema_type, alias = _parse_type(type_text)
        returns.append(Argument(name, schema_type, alias=alias))
    return tuple(returns)
