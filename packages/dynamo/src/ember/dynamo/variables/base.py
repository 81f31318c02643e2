"""The values of symbolic execution: one ``VariableTracker`` per Python value the bytecode handles.

A tracker knows what capture may assume about its value (its ``source``: where the running frame
finds it, so that guards and the generated code can reach it) and how to answer the operations the
bytecode applies to it (attribute loads, calls, iteration, truth). What a tracker cannot answer
raises ``Unsupported``: a graph break at the instruction that asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.source import Source

if TYPE_CHECKING:
    from ember.dynamo.codegen import PyCodegen
    from ember.dynamo.symbolic_convert import InstructionTranslatorBase


class VariableTracker:
    """Base of every tracked value. Trackers are immutable except containers, which record mutation."""

    source: Source | None = None

    def python_type(self) -> type:
        raise Unsupported(f"the type of {self} is not known to capture")

    def is_python_constant(self) -> bool:
        try:
            self.as_python_constant()
        except Unsupported:
            return False
        return True

    def as_python_constant(self) -> Any:
        raise Unsupported(f"{self} is not a Python constant")

    def var_getattr(self, tx: InstructionTranslatorBase, name: str) -> VariableTracker:
        raise Unsupported(f"attribute {name!r} of {self.describe()} is not supported")

    def call_function(
        self, tx: InstructionTranslatorBase, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        raise Unsupported(f"calling {self.describe()} is not supported")

    def call_method(
        self,
        tx: InstructionTranslatorBase,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def unpack(self, tx: InstructionTranslatorBase) -> list[VariableTracker]:
        """The items iteration yields, all at once (finite iterables only)."""
        raise Unsupported(f"iterating over {self.describe()} is not supported")

    def truth(self, tx: InstructionTranslatorBase) -> bool:
        raise Unsupported(f"the truth value of {self.describe()} is not known at capture time")

    def reconstruct(self, cg: PyCodegen) -> None:
        """Emit bytecode that pushes the value this tracker stands for."""
        if self.source is not None:
            cg.load_source(self.source)
            return
        raise Unsupported(f"cannot rebuild {self.describe()} after the graph")

    def describe(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ConstantVariable(VariableTracker):
    """An immutable Python value known at capture time (int, float, str, None, dtype, device, ...)."""

    def __init__(self, value: Any, source: Source | None = None) -> None:
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def as_python_constant(self) -> Any:
        return self.value

    def truth(self, tx) -> bool:
        return bool(self.value)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        attr = getattr(self.value, name)
        if callable(attr):
            return BuiltinMethodVariable(self, name)
        return ConstantVariable(attr)

    def unpack(self, tx) -> list[VariableTracker]:
        if isinstance(self.value, (str, bytes, tuple, frozenset)):
            return [ConstantVariable(v) for v in self.value]
        return super().unpack(tx)

    def reconstruct(self, cg) -> None:
        cg.load_const(self.value)

    def describe(self) -> str:
        return f"the constant {self.value!r}"

    def __repr__(self) -> str:
        return f"ConstantVariable({self.value!r})"


class NullVariable(VariableTracker):
    """The NULL that call sequences push below or above a callable."""

    def reconstruct(self, cg) -> None:
        cg.push_null()

    def describe(self) -> str:
        return "NULL"


class CellVariable(VariableTracker):
    """A closure cell: a box whose content is a tracker. ``dirty`` records a store during capture."""

    def __init__(self, content: VariableTracker | None = None, source: Source | None = None) -> None:
        self.content = content
        self.source = source  # where the cell object itself lives, for cells of real functions
        self.dirty = False

    def describe(self) -> str:
        return "a closure cell"


def is_constant(vt: VariableTracker) -> bool:
    return isinstance(vt, ConstantVariable)


def constants(vts: list[VariableTracker]) -> list[Any]:
    return [v.as_python_constant() for v in vts]
