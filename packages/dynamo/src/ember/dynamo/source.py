"""Where a value the graph depends on comes from, as a Python expression over the frame.

``L`` is the frame's locals (its arguments, and free variables by name holding their cells'
contents) and ``G`` its globals; guards are these expressions compared with what capture saw.
"""

from __future__ import annotations

from dataclasses import dataclass


class Source:
    def name(self) -> str:
        raise NotImplementedError(type(self).__name__)

    def is_global(self) -> bool:
        return False


@dataclass(frozen=True)
class LocalSource(Source):
    local_name: str

    def name(self) -> str:
        return f"L[{self.local_name!r}]"


@dataclass(frozen=True)
class GlobalSource(Source):
    global_name: str

    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def is_global(self) -> bool:
        return True


@dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    member: str

    def name(self) -> str:
        if self.member.isidentifier():
            return f"{self.base.name()}.{self.member}"
        return f"getattr({self.base.name()}, {self.member!r})"

    def is_global(self) -> bool:
        return self.base.is_global()


@dataclass(frozen=True)
class GetItemSource(Source):
    base: Source
    index: object  # an int, a str or another hashable constant

    def name(self) -> str:
        return f"{self.base.name()}[{self.index!r}]"

    def is_global(self) -> bool:
        return self.base.is_global()


@dataclass(frozen=True)
class DictItemSource(Source):
    """``base[key]`` where the key is itself read from the frame (a dict keyed by tensors, as an
    optimizer's ``state`` is keyed by its parameters)."""

    base: Source
    key: Source

    def name(self) -> str:
        return f"{self.base.name()}[{self.key.name()}]"

    def is_global(self) -> bool:
        return self.base.is_global()


@dataclass(frozen=True)
class TypeSource(Source):
    base: Source

    def name(self) -> str:
        return f"type({self.base.name()})"

    def is_global(self) -> bool:
        return self.base.is_global()


@dataclass(frozen=True)
class ModuleGlobalSource(Source):
    """A global of another module than the frame's (a function inlined from another file reads it)."""

    module: object  # the module object
    member: str

    def name(self) -> str:
        return f"__import__('sys').modules[{self.module.__name__!r}].{self.member}"

    def is_global(self) -> bool:
        return True

    def __hash__(self) -> int:
        return hash((id(self.module), self.member))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModuleGlobalSource) and other.module is self.module and other.member == self.member


@dataclass(frozen=True)
class TensorPropertySource(Source):
    """``base.size()[i]`` / ``base.stride()[i]``: a symbolic size's place in its input tensor."""

    base: Source
    prop: str  # "size" or "stride"
    index: int

    def name(self) -> str:
        return f"{self.base.name()}.{self.prop}()[{self.index}]"
