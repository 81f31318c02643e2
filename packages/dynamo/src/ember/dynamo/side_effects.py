"""Mutations capture saw, replayed by the generated code after the graph runs, as eager would leave them.

Containers that came from the frame (lists, dicts, sets with a source) are rewritten in place with
their final contents; attribute stores on objects (from the frame or made during capture), stores to
globals and to closure cells are replayed with ``STORE_ATTR`` / ``STORE_GLOBAL`` / cell writes.
"""

from __future__ import annotations

from typing import Any

from ember.dynamo.exc import Unsupported
from ember.dynamo.variables.base import CellVariable, VariableTracker


class SideEffects:
    def __init__(self) -> None:
        self.mutated: dict[int, VariableTracker] = {}  # source-backed containers changed in place
        self.attrs: dict[int, tuple[VariableTracker, dict[str, VariableTracker]]] = {}
        self.new_objects: dict[int, VariableTracker] = {}
        self.globals: dict[str, VariableTracker] = {}  # stores to the frame's globals
        self.cells: dict[int, CellVariable] = {}  # cells of real functions written during capture
        self.tensor_grads: dict[int, tuple[VariableTracker, VariableTracker]] = {}  # id(tensor) -> .grad set

    def mutate(self, vt: VariableTracker) -> None:
        if vt.source is not None:
            self.mutated[id(vt)] = vt

    def mutate_iterator(self, vt: VariableTracker) -> None:
        pass  # iterators are rebuilt from what is left of them

    def track_new(self, vt: VariableTracker) -> None:
        self.new_objects[id(vt)] = vt
        self.attrs.setdefault(id(vt), (vt, {}))

    def pending_attr(self, vt: VariableTracker, name: str) -> VariableTracker | None:
        entry = self.attrs.get(id(vt))
        if entry is None:
            return None
        value = entry[1].get(name)
        if value is DELETED:
            from ember.dynamo.variables.exceptions import user_error

            raise user_error(AttributeError, name)
        return value

    def attrs_of(self, vt: VariableTracker) -> dict[str, VariableTracker]:
        entry = self.attrs.get(id(vt))
        return {} if entry is None else dict(entry[1])

    def store_attr(self, vt: VariableTracker, name: str, value: VariableTracker) -> None:
        from ember.dynamo.variables.objects import ObjectVariable, PythonModuleVariable
        from ember.dynamo.variables.user_objects import NewObjectVariable

        if isinstance(vt, NewObjectVariable) or (isinstance(vt, (ObjectVariable, PythonModuleVariable)) and vt.source):
            if isinstance(vt, ObjectVariable) and vt.is_module() and _is_module_slot(vt.value, name, value):
                raise Unsupported("assigning a parameter, buffer or submodule inside the compiled region")
            self.attrs.setdefault(id(vt), (vt, {}))[1][name] = value
            return
        raise Unsupported(f"setting attribute {name!r} on {vt.describe()}")

    def store_tensor_grad(self, vt: VariableTracker, real: Any, value: VariableTracker) -> None:
        """``tensor.grad = None`` on a tensor the frame reads from a source (a parameter or an input);
        kept by the real tensor, which several trackers (one per way the frame reached it) stand for."""
        self.tensor_grads[id(real)] = (vt, value)

    def pending_grad(self, real: Any) -> VariableTracker | None:
        entry = self.tensor_grads.get(id(real))
        return None if entry is None else entry[1]

    def store_global(self, name: str, value: VariableTracker) -> None:
        self.globals[name] = value

    def store_cell(self, cell: CellVariable, value: VariableTracker) -> None:
        cell.content = value
        cell.dirty = True
        if cell.source is not None:
            self.cells[id(cell)] = cell

    def is_empty(self) -> bool:
        return not (
            self.mutated or any(a for _, a in self.attrs.values()) or self.globals or self.cells or self.tensor_grads
        )

    def codegen(self, cg: Any) -> None:
        """Emit the replay, after the graph's outputs are stored."""
        from ember.dynamo.variables.containers import DictVariable, ListVariable, SetVariable
        from ember.dynamo.variables.user_objects import NewObjectVariable

        for vt in self.mutated.values():
            if isinstance(vt, ListVariable):
                for item in vt.items:
                    cg.reconstruct(item)
                cg.build("BUILD_LIST", len(vt.items))
                cg.load_source(vt.source)
                cg.load_const(slice(None))
                cg.add("STORE_SUBSCR")
            elif isinstance(vt, (DictVariable, SetVariable)):
                # Build the new contents first: they may read the old ones by source.
                fresh = (
                    DictVariable(vt.items, cls=dict) if isinstance(vt, DictVariable) else SetVariable(vt.unpack(None))
                )
                fresh.reconstruct(cg)
                temp = cg.store_temp()
                cg.load_source(vt.source)
                cg.call_method_on_stack("clear", 0)
                cg.add("POP_TOP")
                cg.load_source(vt.source)
                cg.push_method("update")
                cg.load_temp(temp)
                cg.call_pushed_method(1)
                cg.add("POP_TOP")
            else:
                raise Unsupported(f"replaying a mutation of {vt.describe()}")
        for vt, attrs in self.attrs.values():
            if isinstance(vt, NewObjectVariable):
                continue  # built with its attributes where it is rebuilt
            for name, value in attrs.items():
                if value is DELETED:
                    cg.load_source(vt.source)
                    cg.add("DELETE_ATTR", name)
                    continue
                cg.reconstruct(value)
                cg.load_source(vt.source) if vt.source is not None else cg.reconstruct(vt)
                cg.store_attr_raw(name)
        for vt, value in self.tensor_grads.values():
            cg.reconstruct(value)
            cg.load_source(vt.source)
            cg.store_attr_raw("grad")
        for name, value in self.globals.items():
            cg.reconstruct(value)
            cg.add("STORE_GLOBAL", name)
        for cell in self.cells.values():
            cg.reconstruct(cell.content)
            cg.load_source(cell.source)
            cg.store_attr_raw("cell_contents")


class _Deleted(VariableTracker):
    """The value of an attribute deleted during capture (``del obj.attr``)."""


DELETED = _Deleted()


def _is_module_slot(module: Any, name: str, value: VariableTracker) -> bool:
    from ember.dynamo.variables.tensor import TensorVariable

    d = module.__dict__
    if name in d.get("_parameters", {}) or name in d.get("_modules", {}):
        return True
    if isinstance(value, TensorVariable) and name in d.get("_buffers", {}):
        return False  # replayed through Module.__setattr__, which updates the buffer
    return False
