"""The errors of graph capture, and the record of each graph break."""

from __future__ import annotations

from dataclasses import dataclass, field


class Unsupported(Exception):
    """What the symbolic executor cannot trace: the cause of a graph break.

    ``reason`` is one line in user terms; ``hint`` says what the user can do about it.
    """

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


@dataclass(frozen=True)
class UserFrame:
    filename: str
    lineno: int
    name: str
    line: str  # the source text of the line, stripped ("" when not available)


@dataclass
class GraphBreak:
    """One graph break, where the user's code made it (innermost frame last)."""

    reason: str
    hint: str
    frames: list[UserFrame] = field(default_factory=list)

    def format(self) -> str:
        lines = [f"Graph break: {self.reason}"]
        for f in self.frames:
            lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
            if f.line:
                lines.append(f"    {f.line}")
        if self.hint:
            lines.append(f"  Hint: {self.hint}")
        return "\n".join(lines)


# Every graph break the core meets, in order; explain() and the graph_breaks log read it.
graph_break_log: list[GraphBreak] = []


class BackendCompilerFailed(RuntimeError):
    """The backend raised while compiling a captured graph."""

    def __init__(self, backend_name: str, inner: BaseException) -> None:
        super().__init__(f"backend={backend_name!r} raised:\n{type(inner).__name__}: {inner}")
        self.backend_name = backend_name
        self.inner_exception = inner


class InternalTorchDynamoError(RuntimeError):
    """A failure inside graph capture itself (not the user's code, not the backend)."""
