"""Handlers of the data and stack opcodes (one method per opcode, named like it), mixed into the
instruction translator. Control flow, calls and frames live in ``symbolic_convert``."""

from __future__ import annotations

import operator
import sys

from bytecode import CellVar, FreeVar

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import CellVariable, ConstantVariable, NullVariable, VariableTracker
from ember.dynamo.variables.builtin import apply_operator, getitem
from ember.dynamo.variables.containers import (
    DictVariable,
    ListVariable,
    SetVariable,
    TupleVariable,
)

PY = sys.version_info[:2]

BINARY_OPS = {
    "ADD": operator.add, "AND": operator.and_, "FLOOR_DIVIDE": operator.floordiv, "LSHIFT": operator.lshift,
    "MATRIX_MULTIPLY": operator.matmul, "MULTIPLY": operator.mul, "REMAINDER": operator.mod, "OR": operator.or_,
    "POWER": operator.pow, "RSHIFT": operator.rshift, "SUBTRACT": operator.sub, "TRUE_DIVIDE": operator.truediv,
    "XOR": operator.xor, "INPLACE_ADD": operator.iadd, "INPLACE_AND": operator.iand,
    "INPLACE_FLOOR_DIVIDE": operator.ifloordiv, "INPLACE_LSHIFT": operator.ilshift,
    "INPLACE_MATRIX_MULTIPLY": operator.imatmul, "INPLACE_MULTIPLY": operator.imul,
    "INPLACE_REMAINDER": operator.imod, "INPLACE_OR": operator.ior, "INPLACE_POWER": operator.ipow,
    "INPLACE_RSHIFT": operator.irshift, "INPLACE_SUBTRACT": operator.isub, "INPLACE_TRUE_DIVIDE": operator.itruediv,
    "INPLACE_XOR": operator.ixor,
}  # fmt: skip
COMPARE_OPS = {
    "LT": operator.lt, "LE": operator.le, "EQ": operator.eq, "NE": operator.ne, "GT": operator.gt, "GE": operator.ge,
}  # fmt: skip


class _Unbound(VariableTracker):
    """What LOAD_FAST_AND_CLEAR pushes for an unbound local (restored by the STORE_FAST after)."""


UNBOUND = _Unbound()


class DataOpsMixin:
    stack: list[VariableTracker]
    symbolic_locals: dict[str, VariableTracker]
    cells: dict[str, CellVariable]

    # -- stack ------------------------------------------------------------------------------------
    def push(self, vt: VariableTracker) -> None:
        self.stack.append(vt)

    def pop(self) -> VariableTracker:
        return self.stack.pop()

    def popn(self, n: int) -> list[VariableTracker]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def NOP(self, inst):
        pass

    RESUME = CACHE = EXTENDED_ARG = COPY_FREE_VARS = PRECALL = NOP

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        self.push(NullVariable())

    def COPY(self, inst):
        self.push(self.stack[-inst.arg])

    def SWAP(self, inst):
        self.stack[-1], self.stack[-inst.arg] = self.stack[-inst.arg], self.stack[-1]

    def END_FOR(self, inst):
        # 3.12 pops the iterator and the last value; 3.13 only one (a POP_TOP follows). Reached only
        # by falling through, which capture never does: FOR_ITER jumps past it when exhausted.
        self.pop()
        if PY < (3, 13):
            self.pop()

    # -- locals -----------------------------------------------------------------------------------
    def load_local(self, name: str) -> VariableTracker:
        if name not in self.symbolic_locals:
            raise Unsupported(f"local variable {name!r} referenced before assignment")
        vt = self.symbolic_locals[name]
        realize = getattr(vt, "realize", None)
        if realize is not None:
            vt = realize(self)
            self.symbolic_locals[name] = vt
        return vt

    def LOAD_FAST(self, inst):
        if isinstance(inst.arg, (CellVar, FreeVar)):
            self.push(self.cells[inst.arg.name])  # 3.13's LOAD_CLOSURE
            return
        if inst.arg not in self.symbolic_locals and inst.arg in self.cells:
            self.push(self.cells[inst.arg])  # 3.13's LOAD_CLOSURE of an argument held in a cell
            return
        self.push(self.load_local(inst.arg))

    LOAD_FAST_CHECK = LOAD_FAST

    def LOAD_FAST_AND_CLEAR(self, inst):
        name = inst.arg
        self.push(self.load_local(name) if name in self.symbolic_locals else UNBOUND)
        self.symbolic_locals.pop(name, None)

    def LOAD_FAST_LOAD_FAST(self, inst):
        for name in inst.arg:
            self.push(self.load_local(name))

    def STORE_FAST(self, inst):
        value = self.pop()
        if isinstance(inst.arg, (CellVar, FreeVar)):
            raise Unsupported("STORE_FAST to a cell")
        if value is UNBOUND:
            self.symbolic_locals.pop(inst.arg, None)
        else:
            self.symbolic_locals[inst.arg] = value

    def STORE_FAST_STORE_FAST(self, inst):
        for name in inst.arg:
            value = self.pop()
            self.symbolic_locals[name] = value

    def STORE_FAST_LOAD_FAST(self, inst):
        store, load = inst.arg
        self.symbolic_locals[store] = self.pop()
        self.push(self.load_local(load))

    def DELETE_FAST(self, inst):
        self.symbolic_locals.pop(inst.arg, None)

    def LOAD_CONST(self, inst):
        self.push(ConstantVariable(inst.arg))

    def MAKE_CELL(self, inst):
        name = inst.arg.name
        content = self.load_local(name) if name in self.symbolic_locals else None
        self.cells[name] = self.new_cell(name, content)
        self.symbolic_locals.pop(name, None)

    def LOAD_CLOSURE(self, inst):
        self.push(self.cells[inst.arg.name])

    def LOAD_DEREF(self, inst):
        cell = self.cells[inst.arg.name]
        if cell.content is None:
            raise Unsupported(f"free variable {inst.arg.name!r} referenced before assignment")
        realize = getattr(cell.content, "realize", None)
        if realize is not None:
            cell.content = realize(self)
        self.push(cell.content)

    def STORE_DEREF(self, inst):
        self.output.side_effects.store_cell(self.cells[inst.arg.name], self.pop())

    def DELETE_DEREF(self, inst):
        raise Unsupported("del of a closure variable")

    # -- operators --------------------------------------------------------------------------------
    def BINARY_OP(self, inst):
        b = self.pop()
        a = self.pop()
        self.push(apply_operator(self, BINARY_OPS[inst.arg.name], [a, b]))

    def COMPARE_OP(self, inst):
        b = self.pop()
        a = self.pop()
        name = inst.arg.name.removesuffix("_CAST")
        result = apply_operator(self, COMPARE_OPS[name], [a, b])
        if inst.arg.name.endswith("_CAST") and isinstance(result, ConstantVariable):
            result = ConstantVariable(bool(result.value))
        self.push(result)

    def IS_OP(self, inst):
        b = self.pop()
        a = self.pop()
        self.push(apply_operator(self, operator.is_not if inst.arg else operator.is_, [a, b]))

    def CONTAINS_OP(self, inst):
        container = self.pop()
        item = self.pop()
        result = apply_operator(self, operator.contains, [container, item])
        if inst.arg:
            result = ConstantVariable(not result.truth(self))
        self.push(result)

    def UNARY_NEGATIVE(self, inst):
        self.push(apply_operator(self, operator.neg, [self.pop()]))

    def UNARY_POSITIVE(self, inst):
        self.push(apply_operator(self, operator.pos, [self.pop()]))

    def UNARY_INVERT(self, inst):
        self.push(apply_operator(self, operator.invert, [self.pop()]))

    def UNARY_NOT(self, inst):
        self.push(ConstantVariable(not self.pop().truth(self)))

    def TO_BOOL(self, inst):
        value = self.pop()
        self.push(ConstantVariable(value.truth(self)))

    def CALL_INTRINSIC_1(self, inst):
        name = inst.arg.name
        if name == "INTRINSIC_UNARY_POSITIVE":
            self.UNARY_POSITIVE(inst)
        elif name == "INTRINSIC_LIST_TO_TUPLE":
            self.push(TupleVariable(self.pop().unpack(self)))
        else:
            raise Unsupported(f"intrinsic {name}")

    # -- subscripts -------------------------------------------------------------------------------
    def BINARY_SUBSCR(self, inst):
        key = self.pop()
        obj = self.pop()
        self.push(getitem(self, obj, key))

    def STORE_SUBSCR(self, inst):
        key = self.pop()
        obj = self.pop()
        value = self.pop()
        self.store_subscr(obj, key, value)

    def store_subscr(self, obj, key, value):
        from ember.dynamo.variables.tensor import TensorVariable

        if isinstance(obj, TensorVariable):
            self.output.call_graph("call_function", operator.setitem, [obj, key, value], {})
            return
        obj.call_method(self, "__setitem__", [key, value], {})

    def DELETE_SUBSCR(self, inst):
        key = self.pop()
        obj = self.pop()
        obj.call_method(self, "__delitem__", [key], {})

    def BUILD_SLICE(self, inst):
        self.push(self.make_slice(self.popn(inst.arg)))

    def make_slice(self, parts):
        from ember.dynamo.variables.tensor import SliceVariable, SymNodeVariable

        if any(isinstance(p, SymNodeVariable) for p in parts):
            return SliceVariable(parts)
        return ConstantVariable(slice(*[p.as_python_constant() for p in parts]))

    def as_index(self, vt):
        from ember.dynamo.variables.tensor import SymNodeVariable

        if isinstance(vt, SymNodeVariable):
            return vt.as_int()
        return vt.as_python_constant()

    def BINARY_SLICE(self, inst):
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        self.push(getitem(self, obj, self.make_slice([start, stop])))

    def STORE_SLICE(self, inst):
        stop = self.pop()
        start = self.pop()
        obj = self.pop()
        value = self.pop()
        self.store_subscr(obj, self.make_slice([start, stop]), value)

    # -- building containers ----------------------------------------------------------------------
    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_SET(self, inst):
        self.push(SetVariable(self.popn(inst.arg)))

    def BUILD_MAP(self, inst):
        items = self.popn(2 * inst.arg)
        d = DictVariable({})
        for k, v in zip(items[::2], items[1::2], strict=True):
            d.call_method(self, "__setitem__", [k, v], {})
        self.push(d)

    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.pop().as_python_constant()
        values = self.popn(inst.arg)
        self.push(DictVariable(dict(zip(keys, values, strict=True))))

    def BUILD_STRING(self, inst):
        parts = self.popn(inst.arg)
        self.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))

    def LIST_APPEND(self, inst):
        value = self.pop()
        self.stack[-inst.arg].call_method(self, "append", [value], {})

    def LIST_EXTEND(self, inst):
        value = self.pop()
        self.stack[-inst.arg].call_method(self, "extend", [value], {})

    def SET_ADD(self, inst):
        value = self.pop()
        self.stack[-inst.arg].call_method(self, "add", [value], {})

    def SET_UPDATE(self, inst):
        value = self.pop()
        self.stack[-inst.arg].call_method(self, "update", [value], {})

    def MAP_ADD(self, inst):
        value = self.pop()
        key = self.pop()
        self.stack[-inst.arg].call_method(self, "__setitem__", [key, value], {})

    def DICT_UPDATE(self, inst):
        value = self.pop()
        self.stack[-inst.arg].call_method(self, "update", [value], {})

    DICT_MERGE = DICT_UPDATE

    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().unpack(self)))

    def UNPACK_SEQUENCE(self, inst):
        items = self.unpack_iterable(self.pop())
        if len(items) != inst.arg:
            raise Unsupported(f"unpacking {len(items)} values into {inst.arg} names")
        for v in reversed(items):
            self.push(v)

    def UNPACK_EX(self, inst):
        items = self.unpack_iterable(self.pop())
        before, after = inst.arg if isinstance(inst.arg, tuple) else (inst.arg & 0xFF, inst.arg >> 8)
        if len(items) < before + after:
            raise Unsupported("not enough values to unpack")
        head, mid, tail = items[:before], items[before : len(items) - after], items[len(items) - after :]
        for v in reversed(tail):
            self.push(v)
        self.push(ListVariable(mid))
        for v in reversed(head):
            self.push(v)

    # -- strings ------------------------------------------------------------------------------------
    def FORMAT_VALUE(self, inst):
        flags = inst.arg
        spec = self.pop().as_python_constant() if (int(flags) & 0x04) else ""
        value = self.pop().as_python_constant()
        conv = int(flags) & 0x03
        if conv == 1:
            value = str(value)
        elif conv == 2:
            value = repr(value)
        elif conv == 3:
            value = ascii(value)
        self.push(ConstantVariable(format(value, spec)))

    def FORMAT_SIMPLE(self, inst):
        self.push(ConstantVariable(format(self.pop().as_python_constant())))

    def FORMAT_WITH_SPEC(self, inst):
        spec = self.pop().as_python_constant()
        self.push(ConstantVariable(format(self.pop().as_python_constant(), spec)))

    def CONVERT_VALUE(self, inst):
        value = self.pop().as_python_constant()
        fn = {1: str, 2: repr, 3: ascii}[int(inst.arg)]
        self.push(ConstantVariable(fn(value)))

    # -- attributes and globals -----------------------------------------------------------------------
    def LOAD_ATTR(self, inst):
        if PY >= (3, 12):
            is_method, name = inst.arg
        else:
            is_method, name = False, inst.arg
        obj = self.pop()
        value = self.getattr(obj, name)
        if is_method:
            if PY >= (3, 13):
                self.push(value)
                self.push(NullVariable())
            else:
                self.push(NullVariable())
                self.push(value)
        else:
            self.push(value)

    def LOAD_METHOD(self, inst):
        obj = self.pop()
        self.push(NullVariable())
        self.push(self.getattr(obj, inst.arg))

    def STORE_ATTR(self, inst):
        obj = self.pop()
        value = self.pop()
        self.store_attr(obj, inst.arg, value)

    def DELETE_ATTR(self, inst):
        from ember.dynamo.side_effects import DELETED
        from ember.dynamo.variables.objects import ObjectVariable
        from ember.dynamo.variables.user_objects import NewObjectVariable

        obj = self.pop()
        if not isinstance(obj, (ObjectVariable, NewObjectVariable)):
            raise Unsupported(f"del of an attribute of {obj.describe()}")
        self.output.side_effects.store_attr(obj, inst.arg, DELETED)

    def LOAD_GLOBAL(self, inst):
        push_null, name = inst.arg if isinstance(inst.arg, tuple) else (False, inst.arg)
        value = self.load_global(name)
        if push_null and PY < (3, 13):
            self.push(NullVariable())
        self.push(value)
        if push_null and PY >= (3, 13):
            self.push(NullVariable())

    def STORE_GLOBAL(self, inst):
        self.store_global(inst.arg, self.pop())

    def DELETE_GLOBAL(self, inst):
        raise Unsupported("del of a global")

    def IMPORT_NAME(self, inst):
        import importlib

        fromlist = self.pop().as_python_constant()
        level = self.pop().as_python_constant()
        if level != 0:
            raise Unsupported("relative import inside the compiled region")
        module = importlib.import_module(inst.arg)
        if not fromlist:
            module = importlib.import_module(inst.arg.split(".")[0])
        from ember.dynamo.variables.objects import PythonModuleVariable

        self.push(PythonModuleVariable(module))

    def IMPORT_FROM(self, inst):
        self.push(self.getattr(self.stack[-1], inst.arg))

    def LOAD_ASSERTION_ERROR(self, inst):
        from ember.dynamo.variables.objects import ClassVariable

        self.push(ClassVariable(AssertionError))

    # -- structural pattern matching (``match``) ------------------------------------------------------
    def GET_LEN(self, inst):
        from ember.dynamo.variables.builtin import call_builtin

        self.push(call_builtin(self, len, [self.stack[-1]], {}))

    def MATCH_SEQUENCE(self, inst):
        from ember.dynamo.variables.containers import BaseListVariable

        subject = self.stack[-1]
        self.push(ConstantVariable(isinstance(subject, BaseListVariable)))

    def MATCH_MAPPING(self, inst):
        self.push(ConstantVariable(isinstance(self.stack[-1], DictVariable)))

    def MATCH_KEYS(self, inst):
        keys = self.stack[-1].as_python_constant()
        subject = self.stack[-2]
        if not isinstance(subject, DictVariable):
            raise Unsupported(f"matching the keys of {subject.describe()}")
        if all(k in subject.items for k in keys):
            self.push(TupleVariable([subject.items[k] for k in keys]))
        else:
            self.push(ConstantVariable(None))

    def MATCH_CLASS(self, inst):
        names = self.pop().as_python_constant()
        cls = self.pop().as_python_constant()
        subject = self.pop()
        if not issubclass(subject.python_type(), cls):
            self.push(ConstantVariable(None))
            return
        positional = getattr(cls, "__match_args__", ())
        if inst.arg > len(positional):
            raise Unsupported(f"{cls.__name__}() accepts {len(positional)} positional sub-patterns")
        attrs = [*positional[: inst.arg], *names]
        self.push(TupleVariable([self.getattr(subject, a) for a in attrs]))
