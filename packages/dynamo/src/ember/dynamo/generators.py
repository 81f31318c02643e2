"""Generators called inside the captured region, run lazily as eager runs them.

A generator function's call makes a ``GeneratorVariable`` holding a nested translator over the
generator's code; each ``next`` runs that translator until its next YIELD_VALUE (or its return), so
the generator's side effects interleave with its consumer's as in eager execution.
"""

from __future__ import annotations

import inspect
import sys

from ember.dynamo.exc import Unsupported
from ember.dynamo.symbolic_convert import InliningInstructionTranslator
from ember.dynamo.variables.base import ConstantVariable, VariableTracker
from ember.dynamo.variables.containers import IteratorVariable

PY = sys.version_info[:2]
MAX_YIELDS = 10_000


class GeneratorTranslator(InliningInstructionTranslator):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pending: VariableTracker | None = None
        self.yields = 0
        self.started = False

    def resume(self, sent: VariableTracker | None = None) -> VariableTracker | None:
        """Run to the next yield: its value, or None once the generator has returned. ``sent`` is what
        the paused ``yield`` evaluates to (None for ``next``)."""
        if self.return_value is not None:
            return None
        if self.started:
            self.push(sent if sent is not None else ConstantVariable(None))
        elif sent is not None and not (isinstance(sent, ConstantVariable) and sent.value is None):
            raise Unsupported("can't send a non-None value to a just-started generator")
        self.started = True
        self.pending = None
        while self.pending is None and self.return_value is None:
            self.step()
        return self.pending

    def RETURN_GENERATOR(self, inst):
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst):
        self.pending = self.pop()
        self.yields += 1
        if self.yields > MAX_YIELDS:
            raise Unsupported("a generator yielded too many values to unroll")

    def GET_YIELD_FROM_ITER(self, inst):
        self.push(self.get_iter(self.pop()))

    def SEND(self, inst):
        self.pop()  # the value sent: always None here
        receiver = self.stack[-1]
        if not isinstance(receiver, IteratorVariable):
            raise Unsupported(f"yield from {receiver.describe()}")
        item = receiver.next(self)
        if item is not None:
            self.push(item)
            return
        if PY < (3, 12):
            self.stack[-1] = ConstantVariable(None)  # the receiver's return value replaces it
        else:
            self.push(ConstantVariable(None))
        self.jump(inst)

    def END_SEND(self, inst):
        value = self.pop()
        self.pop()
        self.push(value)


class GeneratorVariable(IteratorVariable):
    """A generator object made during capture; advanced lazily by ``next``."""

    def __init__(self, translator: GeneratorTranslator) -> None:
        super().__init__([])
        self.translator = translator

    def next(self, tx) -> VariableTracker | None:
        return self.translator.resume()

    def unpack(self, tx) -> list[VariableTracker]:
        out = []
        while (item := self.translator.resume()) is not None:
            out.append(item)
        return out

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        if name in ("send", "__next__"):
            return BuiltinMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name in ("send", "__next__"):
            value = self.translator.resume(args[0] if args else None)
            if value is None:
                from ember.dynamo.variables.exceptions import user_error

                raise user_error(StopIteration)
            return value
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg) -> None:
        raise Unsupported("a generator made inside the compiled region escapes it")

    def describe(self) -> str:
        return "a generator"


def inline_generator(tx, fn_vt, args, kwargs) -> GeneratorVariable:
    code = fn_vt.get_code()
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise Unsupported("coroutines and async generators are not supported by capture")
    bound = fn_vt.bind(tx, args, kwargs)
    cells = fn_vt.closure_cells(tx)
    return GeneratorVariable(GeneratorTranslator(tx.output, code, fn_vt.get_globals(), bound, cells, parent=tx))
