"""Exceptions raised inside the captured region."""

from __future__ import annotations

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import VariableTracker


class ExceptionVariable(VariableTracker):
    def __init__(self, cls: type, args: list[VariableTracker]) -> None:
        self.cls = cls
        self.args = args

    def python_type(self) -> type:
        return self.cls

    def reconstruct(self, cg) -> None:
        cg.call_const(self.cls, self.args)

    def var_getattr(self, tx, name):
        from ember.dynamo.variables.containers import TupleVariable

        if name == "args":
            return TupleVariable(self.args)
        raise Unsupported(f"exception attribute {name!r}")

    def describe(self) -> str:
        return f"a {self.cls.__name__}"
