"""One frame's code to a compiled replacement: the seam between the frame hook and capture."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from ember.dynamo.guards import Guard


@dataclass(frozen=True)
class CompileOptions:
    backend: Callable  # (GraphModule, example_inputs) -> callable
    fullgraph: bool = False
    dynamic: bool | None = None  # True: all sizes symbolic; False: none; None: automatic
    export: bool = False


@dataclass
class CompiledFrame:
    code: CodeType  # runs in place of the frame's code: same arguments, flags and free variables
    guards: list[Guard]
    shape_env: Any = None  # the ShapeEnv when sizes were symbolic
    shape_inputs: list[tuple[Any, Any]] = field(default_factory=list)  # (fake value, Source) for produce_guards
    graphs: list[Any] = field(default_factory=list)  # the GraphModules handed to the backend, in order


def compile_frame(
    code: CodeType,
    f_globals: dict[str, Any],
    f_locals: dict[str, Any],
    closure: tuple | None,
    options: CompileOptions,
    frame_state: Any,
) -> CompiledFrame | None:
    """Capture ``code`` run with ``f_locals``; None when the frame has nothing worth compiling."""
    raise NotImplementedError("symbolic execution of bytecode is not built yet")
