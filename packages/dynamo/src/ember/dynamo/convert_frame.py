"""One frame's code to a compiled replacement: the seam between the frame hook and capture.

``compile_frame`` traces the frame's bytecode (``symbolic_convert``), compiles the graph with the
backend, and writes the replacement code: call the compiled graph with the inputs loaded by their
sources, replay side effects, then either rebuild the return value or, at a graph break, run the
instruction that broke and continue in a resume function (``resume_execution``). A break inside an
inlined call, or at a call that cannot be traced, is found on a first trace; a second trace stops
at that instruction of the root frame.
"""

from __future__ import annotations

import inspect
import logging
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bytecode import Bytecode, Instr, Label

from ember.dynamo.exc import BackendCompilerFailed, GraphBreak, Unsupported, graph_break_log
from ember.dynamo.guards import Guard

PY = sys.version_info[:2]


@dataclass(frozen=True)
class CompileOptions:
    backend: Callable  # (GraphModule, example_inputs) -> callable
    fullgraph: bool = False
    dynamic: bool | None = None  # True: all sizes symbolic; False: none; None: automatic
    export: bool = False


@dataclass
class CompiledFrame:
    code: types.CodeType  # runs in place of the frame's code: same arguments, flags and free variables
    guards: list[Guard]
    shape_env: Any = None  # the ShapeEnv when sizes were symbolic
    shape_inputs: list[tuple[Any, Any]] = field(default_factory=list)  # (fake value, Source) for produce_guards
    graphs: list[Any] = field(default_factory=list)  # the GraphModules handed to the backend, in order


_SKIP_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def compile_frame(
    code: types.CodeType,
    f_globals: dict[str, Any],
    f_locals: dict[str, Any],
    closure: tuple | None,
    options: CompileOptions,
    frame_state: Any,
) -> CompiledFrame | None:
    """Capture ``code`` run with ``f_locals``; None when the frame has nothing worth compiling."""
    from ember.dynamo.trace_rules import api as _api

    api = _api()
    from ember.dynamo.output_graph import OutputGraph
    from ember.dynamo.symbolic_convert import InstructionTranslator, breakable

    if code.co_flags & _SKIP_FLAGS:
        return None
    break_at: int | None = None
    while True:
        grad = api.is_grad_enabled()
        output = OutputGraph(code, f_globals, f_locals, options, frame_state)
        tx = InstructionTranslator(output, code, f_globals, f_locals, break_at)
        try:
            tx.run()
        except Unsupported as e:
            record = GraphBreak(e.reason, e.hint, list(getattr(e, "frames", None) or []))
            if options.fullgraph:
                raise Unsupported(record.format(), e.hint) from None
            graph_break_log.append(record)
            index = tx.current
            if break_at is None and index is not None and breakable(tx, index):
                break_at = index
                continue
            return None
        except (BackendCompilerFailed, RecursionError):
            raise
        except Exception as e:
            if options.fullgraph:
                raise
            logging.getLogger(__name__).debug("capture of %s failed", code.co_qualname, exc_info=True)
            record = GraphBreak(f"capture failed: {type(e).__name__}: {e}", "", [])
            graph_break_log.append(record)
            return None
        finally:
            api.set_grad_enabled(grad)
        break
    try:
        return _generate(tx, output, code, f_globals, closure)
    except Unsupported as e:
        if options.fullgraph:
            raise
        record = GraphBreak(
            f"cannot continue after the graph: {e.reason}", e.hint, list(getattr(e, "frames", []) or [])
        )
        graph_break_log.append(record)
        return None


def _without_capture(compiled: Callable) -> Callable:
    """The compiled graph runs with the frame hook off: its own frames are not user code to capture."""
    try:
        from ember.dynamo.decorators import disable
    except ImportError:
        return compiled
    return disable(compiled)


class _OutputIndex(dict):
    """id(graph value) -> position in the graph's outputs, assigned on first use."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[Any] = []

    def assign(self, vt: Any) -> int:
        key = id(vt)
        if key not in self:
            self[key] = len(self.values)
            self.values.append(vt)
        return self[key]


def _generate(tx, output, code: types.CodeType, f_globals: dict, closure: tuple | None) -> CompiledFrame | None:
    from ember.dynamo.codegen import PyCodegen
    from ember.dynamo.symbolic_convert import prepare

    cg = PyCodegen(output, set(code.co_cellvars), set(code.co_freevars), "___graph_out")
    index = _OutputIndex()
    cg.outputs = index
    output.side_effects.codegen(cg)
    for name, cell in tx.cells.items():
        if name in code.co_freevars:  # a cellvar is the frame's own: written only when a closure needs it
            cg.write_back_cell(cell)
    broke = tx.stopped_at is not None
    if not broke:
        cg.reconstruct(tx.return_value)
        cg.add("RETURN_VALUE")
    else:
        _codegen_break(tx, cg, code, f_globals, closure)
    if not broke and output.op_count == 0 and output.side_effects.is_empty():
        return None  # nothing worth compiling: run the frame as it is
    graphs = []
    head = PyCodegen(output, cg.cellvars, cg.freevars, "___graph_out")
    if output.op_count or index.values or output.grad_changed:
        compiled = _without_capture(output.compile(list(index.values)))
        graphs.append(output.gm)
        sources = [src for src, _, _ in output.inputs]
        head.call(lambda: head.load_const(compiled), [lambda s=s: head.load_source(s) for s in sources])
        head.instrs.append(Instr("STORE_FAST", "___graph_out"))
        if output.grad_changed:
            # A backend need not leave the graph's grad-mode switches in effect (AOT autograd runs the
            # graph under its own mode): set the mode the code after the graph expects, the one where
            # the traced region ended or broke (inside a `with no_grad():` split by a graph break).
            from ember.dynamo.output_graph import _set_grad_enabled

            head.call(lambda: head.load_const(_set_grad_enabled), [lambda: head.load_const(output.grad_mode)])
            head.instrs.append(Instr("POP_TOP"))
    prepared = prepare(code)
    items = list(prepared.bytecode)
    resume_at = next(i for i, it in enumerate(items) if isinstance(it, Instr) and it.name == "RESUME")
    prefix = [it for it in items[: resume_at + 1] if isinstance(it, Instr)]
    new = Bytecode([*prefix, *head.instrs, *cg.instrs])
    new._copy_attr_from(prepared.bytecode)
    new_code = new.to_code()
    return CompiledFrame(
        code=new_code,
        guards=output.guard_list(),
        shape_env=output.shape_env if output.dynamic else None,
        shape_inputs=list(output.shape_inputs),
        graphs=graphs,
    )


def _codegen_break(tx, cg, code: types.CodeType, f_globals: dict, closure: tuple | None) -> None:
    from ember.dynamo.resume_execution import resume_code
    from ember.dynamo.symbolic_convert import _JUMP_IF, STACK_OPS
    from ember.dynamo.variables.base import NullVariable

    idx = tx.stopped_at
    inst = tx.instrs[idx]
    name = inst.name
    if name == "CALL":
        consumed, pushes = inst.arg + 2, 1
    elif name == "CALL_KW":
        consumed, pushes = inst.arg + 3, 1
    elif name == "CALL_FUNCTION_EX":
        consumed, pushes = 3 + (int(inst.arg) & 1), 1
    elif name in _JUMP_IF:
        consumed, pushes = 1, 0
    elif name in STACK_OPS:
        consumed, pushes = STACK_OPS[name]
    else:
        raise Unsupported(f"a graph break at {name}")
    stack = list(tx.stack)
    below, top = stack[: len(stack) - consumed], stack[len(stack) - consumed :]

    def to_temp(vt) -> str | None:
        if isinstance(vt, NullVariable):
            return None
        cg.reconstruct(vt)
        return cg.store_temp()

    below_temps = [to_temp(v) for v in below]
    top_temps = [to_temp(v) for v in top]
    live: list[tuple[str, str]] = []
    for lname, vt in tx.symbolic_locals.items():
        if lname.startswith("___"):
            continue
        live.append((lname, to_temp(vt)))
    for cname in code.co_cellvars:
        cell = tx.cells.get(cname)
        if cell is not None and cell.content is not None:
            live.append((cname, to_temp(cell.content)))
    for t in top_temps:
        cg.push_null() if t is None else cg.load_temp(t)
    if name == "CALL" and tx.kw_names and PY < (3, 13):
        cg.instrs.append(Instr("KW_NAMES", tuple(tx.kw_names)))
    if name == "CALL" and PY < (3, 12):
        cg.instrs.append(Instr("PRECALL", inst.arg))
    lineno = inst.lineno or code.co_firstlineno
    live_names = tuple(n for n, _ in live)
    positions = tx.prepared.positions

    def call_resume(next_index: int, extra: list[str]) -> None:
        nulls = tuple(t is None for t in below_temps) + tuple(False for _ in extra)
        rcode = resume_code(code, positions[next_index], nulls, live_names, lineno)
        fn = types.FunctionType(rcode, f_globals, rcode.co_name, None, closure)
        args = [t for t in below_temps if t is not None] + extra + [t for _, t in live]
        cg.call(lambda: cg.load_const(fn), [lambda a=a: cg.load_temp(a) for a in args])
        cg.add("RETURN_VALUE")

    if name in STACK_OPS:
        cg.instrs.append(Instr(name, inst.arg))
        call_resume(idx + 1, [cg.store_temp()] if pushes else [])
    elif pushes:
        cg.instrs.append(Instr(name, inst.arg))
        result = cg.store_temp()
        call_resume(idx + 1, [result])
    else:
        taken = Label()
        if PY >= (3, 13) and "NONE" not in name:
            cg.instrs.append(Instr("TO_BOOL"))  # 3.13's conditional jumps take exact bools
        # The taken branch is emitted after the jump: 3.11's explicit directions become forward.
        cg.instrs.append(Instr(name.replace("_BACKWARD_", "_FORWARD_"), taken))
        call_resume(idx + 1, [])
        cg.instrs.append(taken)
        call_resume(tx.prepared.label_index[id(inst.arg)], [])
