"""Emitting the replacement bytecode (instructions of the ``bytecode`` library) for 3.11-3.13.

``PyCodegen`` rebuilds Python values from trackers after the graph has run: graph outputs are read
from the tuple the compiled graph returned, values from the frame are loaded by their source, new
containers and objects are built, and each mutable value is built once (kept in a temporary local)
so that aliasing is what eager execution would give.
"""

from __future__ import annotations

import sys
from typing import Any

from bytecode import CellVar, FreeVar, Instr

from ember.dynamo.exc import Unsupported
from ember.dynamo.source import AttrSource, GetItemSource, GlobalSource, LocalSource, Source, TypeSource

PY = sys.version_info[:2]


class PyCodegen:
    def __init__(self, tx_output: Any, cellvars: set[str], freevars: set[str], graph_out_name: str | None = None):
        self.instrs: list[Any] = []
        self.tx_output = tx_output
        self.cellvars = cellvars
        self.freevars = freevars
        self.graph_out_name = graph_out_name
        self.outputs: Any = None  # assigns each graph value rebuilt here a position in the graph's outputs
        self.temps: dict[int, str] = {}
        self.written_cells: set[int] = set()
        self._counter = 0

    # -- plain instructions ---------------------------------------------------------------------
    def add(self, name: str, arg: Any = None) -> None:
        self.instrs.append(Instr(name) if arg is None and name not in _NEEDS_ARG else Instr(name, arg))

    def load_const(self, value: Any) -> None:
        self.instrs.append(Instr("LOAD_CONST", value))

    def push_null(self) -> None:
        self.instrs.append(Instr("PUSH_NULL"))

    def build(self, op: str, n: int) -> None:
        self.instrs.append(Instr(op, n))

    def new_temp(self) -> str:
        self._counter += 1
        return f"___tmp_{self._counter}"

    def store_temp(self) -> str:
        name = self.new_temp()
        self.instrs.append(Instr("STORE_FAST", name))
        return name

    def load_temp(self, name: str) -> None:
        self.instrs.append(Instr("LOAD_FAST", name))

    def load_local(self, name: str) -> None:
        if name in self.cellvars:
            self.instrs.append(Instr("LOAD_DEREF", CellVar(name)))
        elif name in self.freevars:
            self.instrs.append(Instr("LOAD_DEREF", FreeVar(name)))
        else:
            self.instrs.append(Instr("LOAD_FAST", name))

    def load_attr(self, name: str) -> None:
        self.instrs.append(Instr("LOAD_ATTR", name if PY < (3, 12) else (False, name)))

    def store_attr_raw(self, name: str) -> None:
        self.instrs.append(Instr("STORE_ATTR", name))

    def load_global(self, name: str) -> None:
        self.instrs.append(Instr("LOAD_GLOBAL", (False, name)))

    def load_closure(self, name: str) -> None:
        var = CellVar(name) if name in self.cellvars else FreeVar(name)
        self.instrs.append(Instr("LOAD_CLOSURE" if PY < (3, 13) else "LOAD_FAST", var))

    def write_back_cell(self, cell: Any) -> None:
        """Store a frame cell's content, once, when capture changed it (before anything reads the cell)."""
        if id(cell) in self.written_cells:
            return
        self.written_cells.add(id(cell))
        if cell.dirty and cell.content is not None:
            name = cell.root_name
            self.reconstruct(cell.content)
            self.instrs.append(Instr("STORE_DEREF", CellVar(name) if name in self.cellvars else FreeVar(name)))

    # -- sources ----------------------------------------------------------------------------------
    def load_source(self, source: Source) -> None:
        from ember.dynamo.source import DictItemSource, ModuleGlobalSource, TensorPropertySource

        if isinstance(source, LocalSource):
            self.load_local(source.local_name)
        elif isinstance(source, GlobalSource):
            self.load_global(source.global_name)
        elif isinstance(source, ModuleGlobalSource):
            self.load_const(source.module)
            self.load_attr(source.member)
        elif isinstance(source, AttrSource):
            self.load_source(source.base)
            self.load_attr(source.member)
        elif isinstance(source, GetItemSource):
            self.load_source(source.base)
            self.load_const(source.index)
            self.add("BINARY_SUBSCR")
        elif isinstance(source, DictItemSource):
            self.load_source(source.base)
            self.load_source(source.key)
            self.add("BINARY_SUBSCR")
        elif isinstance(source, TypeSource):
            self.call(lambda: self.load_const(type), [lambda: self.load_source(source.base)])
        elif isinstance(source, TensorPropertySource):
            self.load_source(source.base)
            self.push_method(source.prop)
            self.call_pushed_method(0)
            self.load_const(source.index)
            self.add("BINARY_SUBSCR")
        else:
            raise Unsupported(f"cannot load the source {source.name()}")

    # -- calls ------------------------------------------------------------------------------------
    def call(self, load_fn, load_args: list, kwnames: tuple[str, ...] = ()) -> None:
        """Call: ``load_fn`` pushes the callable, each of ``load_args`` one argument (keywords last)."""
        n = len(load_args)
        if PY >= (3, 13):
            load_fn()
            self.push_null()
        else:
            self.push_null()
            load_fn()
        for load in load_args:
            load()
        if kwnames:
            if PY >= (3, 13):
                self.load_const(tuple(kwnames))
                self.instrs.append(Instr("CALL_KW", n))
                return
            self.instrs.append(Instr("KW_NAMES", tuple(kwnames)))
        if PY < (3, 12):
            self.instrs.append(Instr("PRECALL", n))
        self.instrs.append(Instr("CALL", n))

    def call_const(self, fn: Any, args: list, kwargs: dict | None = None) -> None:
        kwargs = kwargs or {}
        loads = [lambda v=v: self.reconstruct(v) for v in [*args, *kwargs.values()]]
        self.call(lambda: self.load_const(fn), loads, tuple(kwargs))

    def call_on_stack(self, n: int, fn: Any) -> None:
        """Call ``fn`` with the ``n`` values on top of the stack as its arguments."""
        temps = [self.store_temp() for _ in range(n)][::-1]
        self.call(lambda: self.load_const(fn), [lambda t=t: self.load_temp(t) for t in temps])

    def push_method(self, name: str) -> None:
        if PY < (3, 12):
            self.instrs.append(Instr("LOAD_METHOD", name))
        else:
            self.instrs.append(Instr("LOAD_ATTR", (True, name)))

    def call_pushed_method(self, n: int) -> None:
        if PY < (3, 12):
            self.instrs.append(Instr("PRECALL", n))
        self.instrs.append(Instr("CALL", n))

    def call_method_on_stack(self, name: str, n: int) -> None:
        if n:
            raise NotImplementedError("methods with arguments on the stack")
        self.push_method(name)
        self.call_pushed_method(0)

    # -- values -----------------------------------------------------------------------------------
    def reconstruct(self, vt: Any) -> None:
        from ember.dynamo.variables.containers import DictVariable, ListVariable, SetVariable
        from ember.dynamo.variables.tensor import SymNodeVariable, TensorVariable
        from ember.dynamo.variables.user_objects import NewObjectVariable

        key = id(vt)
        if key in self.temps:
            self.load_temp(self.temps[key])
            return
        if isinstance(vt, (TensorVariable, SymNodeVariable)):
            if vt.source is not None:
                self.load_source(vt.source)
                return
            if self.outputs is None:
                raise Unsupported("a graph value that is not an output of the graph")
            index = self.outputs.assign(vt)
            self.load_temp(self.graph_out_name)
            self.load_const(index)
            self.add("BINARY_SUBSCR")
            return
        if vt.source is not None and not isinstance(vt, NewObjectVariable):
            self.load_source(vt.source)
            return
        vt.reconstruct(self)
        if isinstance(vt, (ListVariable, DictVariable, SetVariable, NewObjectVariable)):
            self.instrs.append(Instr("COPY", 1))
            name = self.new_temp()
            self.instrs.append(Instr("STORE_FAST", name))
            self.temps[key] = name


_NEEDS_ARG = frozenset({"STORE_FAST", "LOAD_FAST", "STORE_GLOBAL", "LOAD_CONST", "COPY", "SWAP", "DELETE_ATTR"})


def make_call_instrs(fn_const: Any, arg_names: list[str], cg: PyCodegen) -> None:
    cg.call(lambda: cg.load_const(fn_const), [lambda n=n: cg.load_local(n) for n in arg_names])
