"""The instruction translator: symbolic execution of one frame's bytecode over trackers.

Each opcode has a handler named like it (data and stack opcodes in ``bytecode_ops``; control flow,
calls and frames here). Instructions come from the ``bytecode`` library, which spells them the same
way on 3.11-3.13 (LOAD_GLOBAL's NULL bit, LOAD_ATTR's method bit, comparisons, binary ops); where
versions differ in stack layout (where the NULL of a call sits), handlers look at the version.

A call to a user function is inlined by a nested translator over the callee's code, sharing the
output graph. What cannot be traced raises ``Unsupported``; the root translator turns it into a
graph break at its own instruction (see ``convert_frame``).
"""

from __future__ import annotations

import dis
import inspect
import linecache
import sys
import types
from dataclasses import dataclass
from typing import Any

from bytecode import Bytecode, Instr, Label, SetLineno, TryBegin, TryEnd

from ember.dynamo.bytecode_ops import PY, DataOpsMixin
from ember.dynamo.exc import Unsupported, UserFrame
from ember.dynamo.source import GlobalSource, LocalSource, ModuleGlobalSource
from ember.dynamo.variables.base import CellVariable, ConstantVariable, NullVariable, VariableTracker
from ember.dynamo.variables.containers import DictVariable, IteratorVariable, TupleVariable

MAX_INLINE_DEPTH = 40
_JUMP_IF = {
    "POP_JUMP_IF_TRUE": (True, "truth"), "POP_JUMP_IF_FALSE": (False, "truth"),
    "POP_JUMP_FORWARD_IF_TRUE": (True, "truth"), "POP_JUMP_FORWARD_IF_FALSE": (False, "truth"),
    "POP_JUMP_BACKWARD_IF_TRUE": (True, "truth"), "POP_JUMP_BACKWARD_IF_FALSE": (False, "truth"),
    "POP_JUMP_IF_NONE": (True, "none"), "POP_JUMP_IF_NOT_NONE": (False, "none"),
    "POP_JUMP_FORWARD_IF_NONE": (True, "none"), "POP_JUMP_FORWARD_IF_NOT_NONE": (False, "none"),
    "POP_JUMP_BACKWARD_IF_NONE": (True, "none"), "POP_JUMP_BACKWARD_IF_NOT_NONE": (False, "none"),
}  # fmt: skip
CALL_OPS = frozenset({"CALL", "CALL_KW", "CALL_FUNCTION_EX"})
# Other instructions a graph break may stop at: (values consumed, values pushed).
STACK_OPS = {"BINARY_SUBSCR": (2, 1), "STORE_SUBSCR": (3, 0), "BINARY_OP": (2, 1), "COMPARE_OP": (2, 1)}


@dataclass
class Prepared:
    """A code object's instructions, flattened: jump targets as indices, try regions per instruction."""

    bytecode: Bytecode
    instrs: list[Instr]
    positions: list[int]  # index of each instruction in ``bytecode``
    in_try: list[bool]
    label_index: dict[int, int]  # id(Label) -> instruction index
    handlers: list[Handler | None]  # the exception-table entry covering each instruction


@dataclass(frozen=True)
class Handler:
    """One exception-table entry: where to jump, the stack depth to keep, whether to push the offset."""

    target: int  # instruction index
    depth: int
    lasti: bool


def _handlers(code: types.CodeType, count: int) -> list[Handler | None]:
    # The bytecode library does not keep the entries' stack depths; the code object's table has them.
    table = dis._parse_exception_table(code)
    offsets = [i.offset for i in dis.get_instructions(code) if i.opname not in ("CACHE", "EXTENDED_ARG")]
    out: list[Handler | None] = [None] * count
    if not table or len(offsets) != count:
        return out
    index_of = {off: i for i, off in enumerate(offsets)}
    for entry in table:
        target = index_of.get(entry.target)
        if target is None:
            continue
        handler = Handler(target, entry.depth, entry.lasti)
        for i, off in enumerate(offsets):
            if entry.start <= off < entry.end:
                out[i] = handler
    return out


_prepared: dict[types.CodeType, Prepared] = {}


def prepare(code: types.CodeType) -> Prepared:
    p = _prepared.get(code)
    if p is not None:
        return p
    bc = Bytecode.from_code(code)
    instrs, positions, in_try, label_index = [], [], [], {}
    open_entries: list[TryBegin] = []
    for pos, item in enumerate(bc):
        current = open_entries[-1] if open_entries else None
        if isinstance(item, Label):
            label_index[id(item)] = len(instrs)
        elif isinstance(item, TryBegin):
            open_entries.append(item)
        elif isinstance(item, TryEnd):
            if item.entry in open_entries:
                open_entries.remove(item.entry)
        elif isinstance(item, SetLineno):
            continue
        else:
            instrs.append(item)
            positions.append(pos)
            in_try.append(current is not None)
    p = Prepared(bc, instrs, positions, in_try, label_index, _handlers(code, len(instrs)))
    if len(_prepared) > 4096:
        _prepared.clear()
    _prepared[code] = p
    return p


class UserException(Exception):
    """An exception the traced program raises; handled by the program's own handlers, if any."""

    def __init__(self, value: VariableTracker) -> None:
        super().__init__(value.describe())
        self.value = value


class LazyVariable(VariableTracker):
    """A frame argument not looked at yet: wrapped (and guarded) on first use."""

    def __init__(self, value: Any, source) -> None:
        self.value = value
        self.source = source

    def realize(self, tx) -> VariableTracker:
        from ember.dynamo.variables.builder import wrap

        return wrap(tx, self.value, self.source)


class InstructionTranslatorBase(DataOpsMixin):
    def __init__(self, output, code: types.CodeType, f_globals: dict, symbolic_locals: dict, cells: dict, parent=None):
        self.output = output
        self.code = code
        self.f_globals = f_globals
        self.symbolic_locals = symbolic_locals
        self.cells: dict[str, CellVariable] = cells
        self.parent = parent
        self.prepared = prepare(code)
        self.instrs = self.prepared.instrs
        self.stack: list[VariableTracker] = []
        self.ip = 0
        self.current = None
        self.kw_names: tuple | None = None
        self.return_value: VariableTracker | None = None
        self.depth = 0 if parent is None else parent.depth + 1
        self.exc_stack: list[VariableTracker] = []

    # -- running --------------------------------------------------------------------------------
    def run(self) -> None:
        while self.return_value is None:
            self.step()

    def step(self) -> None:
        inst = self.instrs[self.ip]
        self.current = self.ip
        self.ip += 1
        handler = getattr(self, inst.name, None)
        if handler is None:
            raise Unsupported(f"the opcode {inst.name} is not supported by capture")
        # the translator whose instruction runs: the graph records its user frames on the nodes it adds
        output, caller = self.output, getattr(self.output, "current_tx", None)
        output.current_tx = self
        try:
            handler(inst)
        except Unsupported as e:
            if getattr(e, "frames", None) is None:
                e.frames = self.user_frames()
            raise
        except UserException as e:
            self.handle_exception(e)
        finally:
            output.current_tx = caller

    def handle_exception(self, e: UserException) -> None:
        """Jump to the handler the exception table names for the current instruction, or re-raise."""
        entry = self.prepared.handlers[self.current]
        if entry is None:
            raise e
        del self.stack[entry.depth :]
        if entry.lasti:
            self.push(ConstantVariable(self.current))
        self.push(e.value)
        self.ip = entry.target

    def user_frames(self) -> list[UserFrame]:
        frames = [] if self.parent is None else self.parent.user_frames()
        inst = self.instrs[self.current if self.current is not None else 0]
        lineno = inst.lineno or self.code.co_firstlineno
        line = linecache.getline(self.code.co_filename, lineno).strip()
        frames.append(UserFrame(self.code.co_filename, lineno, self.code.co_name, line))
        return frames

    def jump(self, inst) -> None:
        self.ip = self.prepared.label_index[id(inst.arg)]

    def target_index(self, inst) -> int:
        return self.prepared.label_index[id(inst.arg)]

    # -- control flow ---------------------------------------------------------------------------
    def JUMP_FORWARD(self, inst):
        self.jump(inst)

    JUMP_BACKWARD = JUMP_BACKWARD_NO_INTERRUPT = JUMP_ABSOLUTE = JUMP = JUMP_FORWARD

    def _jump_if(self, inst):
        when, kind = _JUMP_IF[inst.name]
        value = self.pop()
        if kind == "none":
            cond = isinstance(value, ConstantVariable) and value.value is None
        else:
            cond = value.truth(self)
        if cond == when:
            self.jump(inst)

    for _name in _JUMP_IF:
        locals()[_name] = _jump_if
    del _name

    def JUMP_IF_TRUE_OR_POP(self, inst):
        if self.stack[-1].truth(self):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_FALSE_OR_POP(self, inst):
        if not self.stack[-1].truth(self):
            self.jump(inst)
        else:
            self.pop()

    def GET_ITER(self, inst):
        self.push(self.get_iter(self.pop()))

    def get_iter(self, vt: VariableTracker) -> VariableTracker:
        if isinstance(vt, IteratorVariable):
            return vt
        return IteratorVariable(self.unpack_iterable(vt))

    def FOR_ITER(self, inst):
        it = self.stack[-1]
        if not isinstance(it, IteratorVariable):
            raise Unsupported(f"iterating over {it.describe()}")
        value = it.next(self)
        if value is not None:
            self.push(value)
            return
        self.pop()
        self.jump(inst)
        # Skip the END_FOR (and 3.13's POP_TOP after it): exhaustion leaves nothing to pop.
        if self.ip < len(self.instrs) and self.instrs[self.ip].name == "END_FOR":
            self.ip += 1
            if PY >= (3, 13) and self.instrs[self.ip].name == "POP_TOP":
                self.ip += 1

    def unpack_iterable(self, vt: VariableTracker) -> list[VariableTracker]:
        if isinstance(vt, ConstantVariable) and isinstance(vt.value, range):
            return [ConstantVariable(v) for v in vt.value]
        if isinstance(vt, DictVariable):
            return vt.unpack(self)
        return vt.unpack(self)

    def RETURN_VALUE(self, inst):
        self.return_value = self.pop()

    def RETURN_CONST(self, inst):
        self.return_value = ConstantVariable(inst.arg)

    def RAISE_VARARGS(self, inst):
        from ember.dynamo.variables.exceptions import ExceptionVariable, as_exception

        if inst.arg == 0:
            if not self.exc_stack:
                raise Unsupported("bare raise with no active exception")
            raise UserException(self.exc_stack[-1])
        cause = as_exception(self.pop()) if inst.arg == 2 else None
        exc = as_exception(self.pop())
        if not isinstance(exc, ExceptionVariable):
            raise Unsupported(f"raise of {exc.describe()}")
        if cause is not None:
            exc.cause = cause
        raise UserException(exc)

    def RERAISE(self, inst):
        exc = self.pop()
        if inst.arg:
            self.pop()  # the saved instruction offset
        raise UserException(exc)

    def PUSH_EXC_INFO(self, inst):
        value = self.pop()
        self.push(self.exc_stack[-1] if self.exc_stack else ConstantVariable(None))
        self.push(value)
        self.exc_stack.append(value)

    def POP_EXCEPT(self, inst):
        self.pop()
        if self.exc_stack:
            self.exc_stack.pop()

    def CHECK_EXC_MATCH(self, inst):
        from ember.dynamo.variables.exceptions import exception_matches

        typ = self.pop()
        self.push(ConstantVariable(exception_matches(self.stack[-1], typ)))

    def WITH_EXCEPT_START(self, inst):
        # [exit, lasti, previous exception, exception]: call exit(type, value, traceback).
        from ember.dynamo.variables.builder import wrap
        from ember.dynamo.variables.exceptions import ExceptionVariable

        exc = self.stack[-1]
        exit_fn = self.stack[-4]
        if not isinstance(exc, ExceptionVariable):
            raise Unsupported("an exception inside a with-block during capture")
        args = [wrap(self, exc.cls, None), exc, ConstantVariable(None)]
        self.push(exit_fn.call_function(self, args, {}))

    def BEFORE_WITH(self, inst):
        ctx = self.pop()
        from ember.dynamo.variables.objects import GradModeVariable

        if not isinstance(ctx, GradModeVariable):
            self._enter_user_context(ctx)
            return
        from ember.dynamo.variables.functions import BuiltinMethodVariable

        self.push(BuiltinMethodVariable(ctx, "__exit__"))
        self.push(ctx.enter(self))

    def _enter_user_context(self, ctx: VariableTracker) -> None:
        from ember.dynamo.variables.builder import wrap
        from ember.dynamo.variables.functions import UserMethodVariable
        from ember.dynamo.variables.objects import ObjectVariable
        from ember.dynamo.variables.user_objects import NewObjectVariable

        if isinstance(ctx, (ObjectVariable, NewObjectVariable)):
            cls = ctx.python_type()
            enter = inspect.getattr_static(cls, "__enter__", None)
            exit_ = inspect.getattr_static(cls, "__exit__", None)
            if isinstance(enter, types.FunctionType) and isinstance(exit_, types.FunctionType):
                self.push(UserMethodVariable(wrap(self, exit_, None), ctx))
                self.push(self.inline_function_value(enter, [ctx], {}))
                return
        raise Unsupported(
            f"with-block over {ctx.describe()}",
            "grad-mode context managers and classes with Python __enter__/__exit__ are traced",
        )

    # -- calls ------------------------------------------------------------------------------------
    def KW_NAMES(self, inst):
        self.kw_names = inst.arg if isinstance(inst.arg, tuple) else self.code.co_consts[inst.arg]

    def CALL(self, inst):
        args = self.popn(inst.arg)
        kwnames = self.kw_names or ()
        self.kw_names = None
        self._call(args, kwnames)

    def CALL_KW(self, inst):
        kwnames = self.pop().as_python_constant()
        args = self.popn(inst.arg)
        self._call(args, kwnames)

    def _call(self, args, kwnames):
        a, b = self.popn(2)
        if PY >= (3, 13):
            fn, self_arg = a, b
        elif isinstance(a, NullVariable):
            fn, self_arg = b, a
        else:
            fn, self_arg = a, b
        if not isinstance(self_arg, NullVariable):
            args = [self_arg, *args]
        if kwnames:
            kwargs = dict(zip(kwnames, args[len(args) - len(kwnames) :], strict=True))
            args = args[: len(args) - len(kwnames)]
        else:
            kwargs = {}
        self.push(self.call_function(fn, list(args), kwargs))

    def CALL_FUNCTION_EX(self, inst):
        kwargs_vt = self.pop() if int(inst.arg) & 1 else DictVariable({})
        args_vt = self.pop()
        a, b = self.popn(2)
        fn = a if PY >= (3, 13) or not isinstance(a, NullVariable) else b
        args = self.unpack_iterable(args_vt)
        if not isinstance(kwargs_vt, DictVariable):
            raise Unsupported("**kwargs that is not a dict")
        kwargs = {k: v for k, v in kwargs_vt.items.items()}
        self.push(self.call_function(fn, args, kwargs))

    def call_function(self, fn: VariableTracker, args, kwargs) -> VariableTracker:
        return fn.call_function(self, args, kwargs)

    def MAKE_FUNCTION(self, inst):
        from ember.dynamo.variables.functions import NestedFunctionVariable

        code_vt = self.pop()
        qualname = None  # 3.11+ takes the qualified name from the code object
        flags = int(inst.arg) if inst.arg is not None and PY < (3, 13) else 0
        closure = self.pop() if flags & 0x08 else None
        if flags & 0x04:
            self.pop()  # annotations
        kwdefaults = self.pop() if flags & 0x02 else None
        defaults = self.pop() if flags & 0x01 else None
        code = code_vt.as_python_constant()
        fn = NestedFunctionVariable(code, qualname or code.co_qualname, self.f_globals, defaults, kwdefaults, closure)
        self.push(fn)

    def SET_FUNCTION_ATTRIBUTE(self, inst):
        fn = self.pop()
        value = self.pop()
        flag = int(inst.arg)
        if flag == 0x08:
            fn.closure = value
        elif flag == 0x02:
            fn.kwdefaults = value
        elif flag == 0x01:
            fn.defaults = value
        self.push(fn)

    def LOAD_SUPER_ATTR(self, inst):
        is_method, _two_args, name = inst.arg
        obj = self.pop()
        cls = self.pop()
        self.pop()  # the global super
        from ember.dynamo.variables.user_objects import SuperVariable

        value = SuperVariable(cls.as_python_constant(), obj).var_getattr(self, name)
        if is_method:
            if PY >= (3, 13):
                self.push(value)
                self.push(NullVariable())
            else:
                self.push(NullVariable())
                self.push(value)
        else:
            self.push(value)

    def zero_arg_super(self) -> VariableTracker:
        from ember.dynamo.variables.user_objects import SuperVariable

        cell = self.cells.get("__class__")
        if cell is None or self.code.co_argcount == 0:
            raise Unsupported("super() without __class__")
        first = self.code.co_varnames[0]
        obj = self.load_local(first) if first in self.symbolic_locals else self.cells[first].content
        return SuperVariable(cell.content.as_python_constant(), obj)

    # -- attributes and globals -------------------------------------------------------------------
    def getattr(self, obj: VariableTracker, name: str) -> VariableTracker:
        return obj.var_getattr(self, name)

    def store_attr(self, obj: VariableTracker, name: str, value: VariableTracker) -> None:
        from ember.dynamo.variables.objects import ObjectVariable
        from ember.dynamo.variables.tensor import TensorVariable
        from ember.dynamo.variables.user_objects import NewObjectVariable

        if isinstance(obj, TensorVariable):
            if (
                name == "grad"
                and obj.source is not None
                and value.is_python_constant()
                and value.as_python_constant() is None
            ):
                # ``p.grad = None`` (an optimizer's zero_grad) on an input or parameter: replayed after the
                # graph, and read back as None by the rest of the frame.
                real = self.output.input_value(obj)
                if real is not None:
                    self.output.side_effects.store_tensor_grad(obj, real, value)
                    return
            raise Unsupported(f"setting the tensor attribute {name!r}")
        if isinstance(obj, (ObjectVariable, NewObjectVariable)):
            cls = obj.python_type()
            static = inspect.getattr_static(cls, name, None)
            if isinstance(static, property):
                if static.fset is None:
                    raise Unsupported(f"property {name!r} of {cls.__name__} has no setter")
                self.inline_function_value(static.fset, [obj, value], {})
                return
            setattr_fn = inspect.getattr_static(cls, "__setattr__", None)
            if isinstance(setattr_fn, types.FunctionType) and not _is_module_setattr(setattr_fn):
                self.inline_function_value(setattr_fn, [obj, ConstantVariable(name), value], {})
                return
            if static is not None and hasattr(type(static), "__set__") and not isinstance(static, types.FunctionType):
                raise Unsupported(f"assigning through the descriptor {name!r} of {cls.__name__}")
        self.output.side_effects.store_attr(obj, name, value)

    def global_source(self, name: str):
        if self.f_globals is self.output.f_globals:
            return GlobalSource(name)
        module = sys.modules.get(self.f_globals.get("__name__", ""))
        if module is not None and module.__dict__ is self.f_globals:
            return ModuleGlobalSource(module, name)
        return None

    def load_global(self, name: str) -> VariableTracker:
        from ember.dynamo.variables.builder import wrap

        if self.f_globals is self.output.f_globals and name in self.output.side_effects.globals:
            return self.output.side_effects.globals[name]
        if name in self.f_globals:
            return wrap(self, self.f_globals[name], self.global_source(name))
        builtins_ns = self.f_globals.get("__builtins__", __builtins__)
        if isinstance(builtins_ns, types.ModuleType):
            builtins_ns = builtins_ns.__dict__
        if name in builtins_ns:
            return wrap(self, builtins_ns[name], None)
        raise Unsupported(f"name {name!r} is not defined")

    def store_global(self, name: str, value: VariableTracker) -> None:
        if self.f_globals is not self.output.f_globals:
            raise Unsupported("storing a global of another module inside the compiled region")
        self.output.side_effects.store_global(name, value)

    def new_cell(self, name: str, content: VariableTracker | None) -> CellVariable:
        return CellVariable(content)

    # -- inlining -----------------------------------------------------------------------------------
    def inline_user_function(self, fn_vt, args, kwargs) -> VariableTracker:
        from ember.dynamo import trace_rules

        fn = getattr(fn_vt, "fn", None)
        if trace_rules.is_disabled(fn):
            raise Unsupported(f"{fn_vt.describe()} is disabled for capture", "it runs eagerly, outside the graph")
        if getattr(fn, "__module__", None) in trace_rules.SIDE_EFFECT_MODULES:
            raise Unsupported(
                f"{fn.__module__}.{fn.__qualname__}() has a side effect outside the graph",
                "log outside the compiled function, or accept the graph break",
            )
        code = fn_vt.get_code()
        if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            from ember.dynamo.generators import inline_generator

            return inline_generator(self, fn_vt, args, kwargs)
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported("inlining is nested too deeply (recursion?)")
        bound = fn_vt.bind(self, args, kwargs)
        cells = fn_vt.closure_cells(self)
        sub = InliningInstructionTranslator(self.output, code, fn_vt.get_globals(), bound, cells, parent=self)
        sub.run()
        return sub.return_value

    def inline_function_value(self, fn: types.FunctionType, args, kwargs) -> VariableTracker:
        from ember.dynamo.variables.functions import UserFunctionVariable

        return self.inline_user_function(UserFunctionVariable(fn), args, kwargs)


def _is_module_setattr(fn) -> bool:
    from ember.nn import Module

    return fn is Module.__setattr__


class InliningInstructionTranslator(InstructionTranslatorBase):
    """Runs a callee's code inside the caller's capture."""


class InstructionTranslator(InstructionTranslatorBase):
    """The root frame: its arguments come from the real frame; it may stop at a graph break."""

    def __init__(self, output, code, f_globals, f_locals, break_at: int | None = None) -> None:
        symbolic_locals: dict[str, VariableTracker] = {}
        nargs = code.co_argcount + code.co_kwonlyargcount
        nargs += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        for name in code.co_varnames[:nargs]:
            if name in f_locals:
                symbolic_locals[name] = LazyVariable(f_locals[name], LocalSource(name))
        cells = {}
        for name in code.co_freevars:
            cell = CellVariable(LazyVariable(f_locals[name], LocalSource(name)) if name in f_locals else None)
            cell.root_name = name
            cells[name] = cell
        super().__init__(output, code, f_globals, symbolic_locals, cells)
        self.break_at = break_at
        self.stopped_at: int | None = None  # the instruction index of the graph break, when one happened

    def new_cell(self, name, content):
        cell = CellVariable(content)
        cell.root_name = name
        return cell

    def step(self) -> None:
        if self.break_at is not None and self.ip == self.break_at:
            self.current = self.ip
            self.stopped_at = self.ip
            raise _StopForBreak()
        super().step()

    def run(self) -> None:
        try:
            super().run()
        except _StopForBreak:
            pass
        except UserException as e:
            err = Unsupported(f"{e.value.describe()} raised and not caught in the compiled frame")
            err.frames = self.user_frames()
            raise err from None


class _StopForBreak(Exception):
    pass


def breakable(tx: InstructionTranslator, index: int) -> bool:
    """Whether a graph break can happen at the root's instruction ``index`` (calls and branches outside
    try/with blocks and loops)."""
    inst = tx.instrs[index]
    if inst.name not in CALL_OPS and inst.name not in _JUMP_IF and inst.name not in STACK_OPS:
        return False  # a raise, like PyTorch's, leaves the whole frame to run eagerly
    if tx.prepared.in_try[index] and not _in_grad_mode_block(tx, index):
        return False
    for j in range(index, len(tx.instrs)):
        later = tx.instrs[j]
        if isinstance(later.arg, Label) and tx.prepared.label_index[id(later.arg)] <= index:
            return False  # a back edge: the break is inside a loop
    return True


__all__ = ["InstructionTranslator", "InstructionTranslatorBase", "LazyVariable", "TupleVariable", "breakable"]


def _in_grad_mode_block(tx: InstructionTranslator, index: int) -> bool:
    """Whether the try region at ``index`` is only that of ``with`` blocks over grad modes: a break there
    leaves the mode set by the graph, and the resume function restores it at the block's end."""
    from ember.dynamo.variables.functions import BuiltinMethodVariable
    from ember.dynamo.variables.objects import GradModeVariable

    handler = tx.prepared.handlers[index]
    if handler is None:
        return False
    names = [i.name for i in tx.instrs[handler.target : handler.target + 2]]
    if names != ["PUSH_EXC_INFO", "WITH_EXCEPT_START"]:
        return False
    exits = [v for v in tx.stack if isinstance(v, BuiltinMethodVariable) and v.name == "__exit__"]
    return bool(exits) and all(isinstance(v.obj, GradModeVariable) for v in exits)
