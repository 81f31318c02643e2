"""Run a function through ``compile_frame`` directly (no frame hook): compile, then run the new code."""

from __future__ import annotations

import contextlib
import types

from ember.dynamo.convert_frame import CompileOptions, compile_frame


class Recorder:
    """A backend that keeps the graphs it was given and runs them as they are."""

    def __init__(self) -> None:
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    @property
    def frame_count(self) -> int:
        return len(self.graphs)

    def op_count(self) -> int:
        return sum(1 for g in self.graphs for n in g.graph.nodes if n.op in ("call_function", "call_method"))


def frame_locals(fn, args, kwargs) -> dict:
    import inspect

    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    f_locals = dict(bound.arguments)
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        with contextlib.suppress(ValueError):
            f_locals[name] = cell.cell_contents
    return f_locals


def compile_and_run(fn, *args, backend=None, fullgraph=False, dynamic=None, frame_state=None, **kwargs):
    """(result, CompiledFrame or None): ``fn(*args, **kwargs)`` run through its captured replacement."""
    backend = backend or Recorder()
    f_locals = frame_locals(fn, args, kwargs)
    options = CompileOptions(backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    cf = compile_frame(fn.__code__, fn.__globals__, f_locals, fn.__closure__, options, frame_state)
    if cf is None:
        return fn(*args, **kwargs), None
    new = types.FunctionType(cf.code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new(*args, **kwargs), cf
