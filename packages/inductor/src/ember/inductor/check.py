"""The check mode, ``ember.compile(fn, options={"check": True})``: compiled code checked node by node.

Each functional graph (forward and backward) is compiled with every tensor a node computes made an
extra output of the compiled graph (the kernels stay fused as usual; the extra outputs are stores
added to them). At each call the graph is also interpreted eagerly, op by op, on copies of the
inputs, and every node's compiled value is compared with eager's in graph order. The first node
whose values differ beyond tolerance raises ``AccuracyError`` (a ``RuntimeError``), naming the node,
its op and the user's source line that made it (the node's ``stack_trace``); compiled code that is
wrong makes the program stop there, as PyTorch's accuracy minifier (``TORCHDYNAMO_REPRO_LEVEL=4``)
treats a wrong result as an error. Random ops draw the same numbers in both runs: the generator is
rewound for the eager run and left where the compiled run moved it.

Tolerances: ``rtol = atol = 1e-4`` for float32/float64, ``1e-2`` for float16/bfloat16, exact
equality for integers and bools; NaN equals NaN. It is a debugging mode: each call runs the graph
twice and compiles it with extra outputs.

The user's line: Dynamo records it on each node of its graph (``stack_trace``). AOT autograd traces
that graph into the functional one by running it, and records on each node it makes the Python frames
it runs under; ``with_user_frames`` runs Dynamo's graph node by node, each op called from a frame
placed at that node's file and line (a one-line function compiled under the user's file name), so
the functional graph's nodes name the user's line too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.tensor import Tensor

TOLERANCE = {D.float16: 1e-2, D.bfloat16: 1e-2}
DEFAULT_TOLERANCE = 1e-4


class AccuracyError(RuntimeError):
    """Compiled code computed a node's value other than eager does."""


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')
_trampolines: dict[tuple[str, int, str], Callable] = {}


def _trampoline(filename: str, lineno: int, name: str) -> Callable:
    """``call(fn, *args, **kwargs)`` whose frame sits at ``filename:lineno`` in a function named ``name``."""
    key = (filename, lineno, name)
    fn = _trampolines.get(key)
    if fn is None:
        ident = name if name.isidentifier() else "user_code"
        source = "\n" * (lineno - 1) + f"def {ident}(__fn, *args, **kwargs): return __fn(*args, **kwargs)\n"
        namespace: dict = {}
        exec(compile(source, filename, "exec"), namespace)
        fn = _trampolines[key] = namespace[ident]
    return fn


def with_user_frames(gm: Any) -> Any:
    """A module that runs ``gm`` node by node, each op called from a frame at the node's user line
    (from its ``stack_trace``), so a tracer that records frames (AOT autograd's) records that line."""
    from ember.fx.interpreter import Interpreter
    from ember.nn.modules.module import Module

    class FramedInterpreter(Interpreter):
        def run_node(self, n):
            self._user = None
            frames = _FRAME.findall(n.meta.get("stack_trace") or "")
            if frames:
                filename, line, name = frames[-1]
                self._user = _trampoline(filename, int(line), name)
            return super().run_node(n)

        def call_function(self, target, args, kwargs):
            if self._user is None:
                return super().call_function(target, args, kwargs)
            return self._user(target, *args, **kwargs)

        def call_method(self, target, args, kwargs):
            if self._user is None:
                return super().call_method(target, args, kwargs)
            return self._user(getattr(args[0], target), *args[1:], **kwargs)

    class WithUserFrames(Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = gm

        @property
        def graph(self) -> Any:
            return gm.graph

        def forward(self, *args: Any) -> Any:
            return FramedInterpreter(gm).run(*args)

    return WithUserFrames()


def _tensor_nodes(gm: Any) -> list[Any]:
    return [
        n
        for n in gm.graph.nodes
        if n.op == "call_function" and isinstance(n.meta.get("val"), Tensor) and n.meta["val"].device.type == "cpu"
    ]


def _with_every_value(gm: Any, nodes: list[Any]) -> Any:
    """A copy of ``gm`` whose output is its own outputs followed by the value of each of ``nodes``."""
    from ember.fx.graph import Graph
    from ember.fx.graph_module import GraphModule

    graph, val_map = Graph(), {}
    outs = graph.graph_copy(gm.graph, val_map)
    outs = list(outs) if isinstance(outs, list | tuple) else [outs]
    graph.output((*outs, *[val_map[n] for n in nodes]))
    return GraphModule(gm, graph)


def _differs(got: Any, want: Any) -> str | None:
    """Why ``got`` is not ``want`` (``None``: equal within tolerance)."""
    if not isinstance(got, Tensor) or not isinstance(want, Tensor):
        return None
    if tuple(got.shape) != tuple(want.shape):
        return f"sizes {tuple(got.shape)} instead of {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} instead of {want.dtype}"
    g, w = got.detach().numpy(), want.detach().numpy()
    if not want.dtype.is_floating_point:
        bad = g != w
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            return f"{int(bad.sum())} of {bad.size} values differ (at {at}: {g[at]!r}, eager {w[at]!r})"
        return None
    tol = TOLERANCE.get(want.dtype, DEFAULT_TOLERANCE)
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.isclose(g64, w64, rtol=tol, atol=tol, equal_nan=True)
    if close.all():
        return None
    at = tuple(int(i) for i in np.argwhere(~close)[0])
    err = float(np.nanmax(np.abs(g64 - w64)[~close]))
    return f"{int((~close).sum())} of {close.size} values differ beyond {tol} (at {at}: {g64[at]!r}, eager {w64[at]!r}; max error {err:.3g})"


def _user_line(node: Any) -> str:
    trace = node.meta.get("stack_trace")
    if not trace:
        return "(no source line recorded)"
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    return "\n".join(lines[-2:])  # the innermost frame: its file and line, then the code


class CheckedGraph:
    """A boxed callable: the compiled graph with extra outputs, checked against eager at each call."""

    _boxed_call = True

    def __init__(self, gm: Any, compiled: Callable, nodes: list[Any], n_outputs: int) -> None:
        self.gm, self.compiled, self.nodes, self.n_outputs = gm, compiled, nodes, n_outputs

    def __call__(self, args: list) -> list:
        from ember.core.generator import default_generator
        from ember.fx.interpreter import Interpreter

        copies = [a.clone() if isinstance(a, Tensor) else a for a in args]
        before = default_generator.get_state()
        outs = self.compiled(list(args))
        after = default_generator.get_state()
        values: dict[Any, Any] = {}

        class Recording(Interpreter):
            def run_node(self, n):
                result = super().run_node(n)
                values[n] = result
                return result

        default_generator.set_state(before)
        try:
            Recording(self.gm).run(*copies)
        finally:
            default_generator.set_state(after)
        for node, got in zip(self.nodes, outs[self.n_outputs :], strict=True):
            why = _differs(got, values[node])
            if why is not None:
                raise AccuracyError(
                    f"compiled code differs from eager at node {node.name} ({node.target}): {why}\n"
                    f"the user's line:\n{_user_line(node)}"
                )
        return outs[: self.n_outputs]


def compile_checked(gm: Any, example_inputs: list) -> CheckedGraph:
    """``compile_fx_inner`` in the check mode: the graph compiled with every node's value as an output."""
    from ember.inductor.compile_fx import compile_fx_inner

    nodes = _tensor_nodes(gm)
    outs = gm.graph.output_node().args[0]
    n_outputs = len(outs) if isinstance(outs, list | tuple) else 1
    compiled = compile_fx_inner(_with_every_value(gm, nodes), example_inputs)
    return CheckedGraph(gm, compiled, nodes, n_outputs)


__all__ = ["AccuracyError", "CheckedGraph", "compile_checked", "with_user_frames"]
