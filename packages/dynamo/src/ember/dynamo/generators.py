"""Generators called inside the captured region: run to exhaustion at capture, their values kept.

A generator function's body is traced by a nested translator whose YIELD_VALUE collects the value;
the call gives an iterator over what was yielded (finite generators only).
"""

from __future__ import annotations

from ember.dynamo.exc import Unsupported
from ember.dynamo.symbolic_convert import InliningInstructionTranslator
from ember.dynamo.variables.base import ConstantVariable
from ember.dynamo.variables.containers import IteratorVariable

MAX_YIELDS = 10_000


class GeneratorTranslator(InliningInstructionTranslator):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.yielded = []

    def RETURN_GENERATOR(self, inst):
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst):
        self.yielded.append(self.pop())
        if len(self.yielded) > MAX_YIELDS:
            raise Unsupported("a generator yielded too many values to unroll")
        self.push(ConstantVariable(None))

    def GET_YIELD_FROM_ITER(self, inst):
        self.push(self.get_iter(self.pop()))

    def SEND(self, inst):
        # ``yield from`` an iterator known at capture: yield every item, then the result is None.
        self.pop()
        it = self.pop()
        self.yielded.extend(it.unpack(self))
        self.push(ConstantVariable(None))
        self.jump(inst)

    def END_SEND(self, inst):
        value = self.pop()
        self.pop()
        self.push(value)


def inline_generator(tx, fn_vt, args, kwargs) -> IteratorVariable:
    import inspect

    code = fn_vt.get_code()
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise Unsupported("coroutines and async generators are not supported by capture")
    bound = fn_vt.bind(tx, args, kwargs)
    cells = fn_vt.closure_cells(tx)
    sub = GeneratorTranslator(tx.output, code, fn_vt.get_globals(), bound, cells, parent=tx)
    sub.run()
    return IteratorVariable(sub.yielded)
