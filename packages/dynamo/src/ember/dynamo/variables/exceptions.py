"""Exceptions raised inside the captured region, and the matching of ``except`` clauses."""

from __future__ import annotations

from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import ConstantVariable, VariableTracker


class ExceptionVariable(VariableTracker):
    def __init__(self, cls: type, args: list[VariableTracker]) -> None:
        self.cls = cls
        self.args = args
        self.cause: VariableTracker = ConstantVariable(None)

    def python_type(self) -> type:
        return self.cls

    def as_python_constant(self) -> Any:
        return self.cls(*[a.as_python_constant() for a in self.args])

    def reconstruct(self, cg) -> None:
        cg.call_const(self.cls, self.args)

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.containers import TupleVariable

        if name == "args":
            return TupleVariable(self.args)
        if name == "__cause__":
            return self.cause
        raise Unsupported(f"exception attribute {name!r}")

    def describe(self) -> str:
        return f"a {self.cls.__name__}"


def as_exception(vt: VariableTracker) -> VariableTracker:
    """``raise X``: an exception class is instantiated with no arguments."""
    value = getattr(vt, "value", getattr(vt, "fn", None))
    if isinstance(value, type) and issubclass(value, BaseException) and not isinstance(vt, ConstantVariable):
        return ExceptionVariable(value, [])
    return vt


def exception_matches(exc: VariableTracker, typ: VariableTracker) -> bool:
    if not isinstance(exc, ExceptionVariable):
        raise Unsupported(f"matching {exc.describe()} in an except clause")
    expected = typ.as_python_constant()
    return issubclass(exc.cls, expected)


def user_error(cls: type, *args: Any) -> Exception:
    """The exception to raise in the translator when the traced program itself raises ``cls(*args)``."""
    from ember.dynamo.symbolic_convert import UserException

    return UserException(ExceptionVariable(cls, [ConstantVariable(a) for a in args]))
