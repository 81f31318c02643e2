"""``ember._dynamo.explain(fn)(*args)``: what compiling ``fn`` makes of it, as a report.

It forgets earlier compiles (as PyTorch's does), runs ``fn`` compiled with a backend that keeps
every graph, and reports the graphs, the graph breaks with the user's file, line and a reason, the
ops of each graph and the guards of each compiled frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ember.dynamo import exc
from ember.dynamo.exc import GraphBreak


@dataclass
class ExplainOutput:
    graphs: list[Any] = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list[GraphBreak] = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list[list[Any]] = field(default_factory=list)
    out_guards: list[str] = field(default_factory=list)
    compile_times: str = ""

    def __str__(self) -> str:
        lines = [
            f"Graph Count: {self.graph_count}",
            f"Graph Break Count: {self.graph_break_count}",
            f"Op Count: {self.op_count}",
        ]
        if self.break_reasons:
            lines.append("Break Reasons:")
            for i, brk in enumerate(self.break_reasons, 1):
                lines.append(f"  Break Reason {i}:")
                lines += [f"    {line}" for line in brk.format().splitlines()]
        if self.ops_per_graph:
            lines.append("Ops per Graph:")
            for i, ops in enumerate(self.ops_per_graph, 1):
                lines.append(f"  Ops {i}:")
                lines += [f"    {_op_name(op)}" for op in ops]
        if self.out_guards:
            lines.append("Out Guards:")
            lines += [f"  {line}" for guards in self.out_guards for line in guards.splitlines()]
        if self.compile_times:
            lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines)


def _op_name(target: Any) -> str:
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if name is None:
        return str(target)
    return f"{module}.{name}" if module else name


class _Recorder:
    def __init__(self) -> None:
        self.graphs: list[Any] = []

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        self.graphs.append(gm)
        return gm.forward


def explain(f: Callable, *extra_args: Any, **extra_kwargs: Any) -> Callable[..., ExplainOutput]:
    """``explain(fn)(*args, **kwargs)`` compiles and runs ``fn`` and returns an ``ExplainOutput``."""

    def inner(*args: Any, **kwargs: Any) -> ExplainOutput:
        from ember.dynamo import eval_frame, frame_cache

        eval_frame.reset()
        recorder = _Recorder()
        first_break = len(exc.graph_break_log)
        collected: list[str] = []

        def record(code: Any, result: Any, compiled_guards: Any) -> None:
            collected.append(compiled_guards.describe())

        frame_cache.compile_listeners.append(record)
        try:
            eval_frame.compile(f, backend=recorder)(*args, **kwargs)
        finally:
            frame_cache.compile_listeners.remove(record)
        breaks = list(exc.graph_break_log[first_break:])
        ops = [
            [node.target for node in gm.graph.nodes if node.op in ("call_function", "call_method", "call_module")]
            for gm in recorder.graphs
        ]
        times = ", ".join(f"{name}: {count} compile(s)" for name, count in frame_cache.compile_counts.items())
        return ExplainOutput(
            graphs=recorder.graphs,
            graph_count=len(recorder.graphs),
            graph_break_count=len(breaks),
            break_reasons=breaks,
            op_count=sum(len(o) for o in ops),
            ops_per_graph=ops,
            out_guards=collected,
            compile_times=times,
        )

    if extra_args or extra_kwargs:  # PyTorch's older form, explain(fn, *args)
        return inner(*extra_args, **extra_kwargs)  # type: ignore[return-value]
    return inner
