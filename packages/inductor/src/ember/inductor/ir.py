"""The loop-level IR: a value is a function from an index to a scalar, written against ``ops``.

- ``TensorBox``: a value not yet in memory: ``size``, ``dtype`` and ``loader(index) -> value``,
  where ``index`` is a list of sympy expressions, one per dimension. Pointwise ops and views build
  new boxes from old ones (a view only rewrites the index), so chains of them inline into whoever
  reads them: that is vertical fusion of pointwise producers.
- ``Buffer``: a value in memory with a layout (sizes, strides, offset). ``InputBuffer`` is a graph
  input; ``ComputedBuffer`` is computed by a loop nest (``Pointwise`` or ``Reduction`` body);
  ``ExternBuffer`` is the output of an eager op called as it is (GEMMs, convolutions, fallbacks).

Sizes, strides and offsets are Python ints where static and sympy expressions over the graph's size
symbols where not (``sizevars.py``): one kernel serves every size of a dynamic dimension.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from ember.inductor.sizevars import at_least_one, statically_equal
from ember.inductor.virtualized import ops

Index = list[sympy.Expr]


def index_symbols(prefix: str, n: int) -> list[sympy.Symbol]:
    return [sympy.Symbol(f"{prefix}{i}", integer=True, nonnegative=True) for i in range(n)]


def contiguous_strides(size: Sequence[Any]) -> tuple[Any, ...]:
    strides, acc = [], 1
    for n in reversed(size):
        strides.append(acc)
        acc *= at_least_one(n)
    return tuple(reversed(strides))


def numel(size: Sequence[int]) -> int:
    return math.prod(size)


@dataclass
class Layout:
    size: tuple[Any, ...]
    stride: tuple[Any, ...]
    offset: Any = 0

    def index(self, index: Index) -> sympy.Expr:
        return sympy.sympify(self.offset) + sum(
            (i * s for i, s, n in zip(index, self.stride, self.size, strict=True) if n != 1), sympy.Integer(0)
        )

    def same_as(self, other: Layout) -> bool:
        """Equal as memory layouts: strides of size-1 dims do not matter."""
        return (
            len(self.size) == len(other.size)
            and all(statically_equal(a, b) for a, b in zip(self.size, other.size, strict=True))
            and statically_equal(self.offset, other.offset)
            and all(
                statically_equal(a, b) for a, b, n in zip(self.stride, other.stride, self.size, strict=True) if n != 1
            )
        )

    def is_contiguous(self) -> bool:
        return self.offset == 0 and all(
            statically_equal(s, c)
            for s, c, n in zip(self.stride, contiguous_strides(self.size), self.size, strict=True)
            if n != 1
        )


@dataclass(eq=False)
class Buffer:
    name: str
    dtype: Any
    layout: Layout

    @property
    def size(self) -> tuple[int, ...]:
        return self.layout.size

    def make_loader(self) -> Callable[[Index], Any]:
        name, layout = self.name, self.layout

        def loader(index: Index) -> Any:
            return ops.load(name, layout.index(index))

        return loader


@dataclass(eq=False)
class InputBuffer(Buffer):
    pass


@dataclass(eq=False)
class ComputedBuffer(Buffer):
    """A loop nest over ``size`` (and ``reduction_size`` for a reduction) that stores into this buffer.

    ``body(index, rindex)`` returns the value to store (pointwise) or to reduce (reduction).
    ``origins`` names the graph nodes whose code it holds, for comments in the generated source.
    """

    body: Callable[[Index, Index], Any] = None  # type: ignore[assignment]
    reduction_size: tuple[int, ...] = ()
    reduction_type: str | None = None
    # for a Welford reduction: which of (mean, m2, count) is stored
    welford_output: int = 0
    origins: list[str] = field(default_factory=list)

    @property
    def is_reduction(self) -> bool:
        return self.reduction_type is not None

    def store_body(self, index: Index, rindex: Index) -> None:
        """Run the body under the current handler: the loads, the math, the store."""
        value = self.body(index, rindex)
        out = self.layout.index(index)
        if self.reduction_type is None:
            ops.store(self.name, out, value)
        else:
            reduced = ops.reduction(self.dtype, self.reduction_type, value)
            if self.reduction_type == "welford":
                reduced = ops.getitem(reduced, self.welford_output)
            elif self.reduction_type in ("argmax", "argmin"):
                reduced = ops.getitem(reduced, 0)  # the index
            ops.store_reduction(self.name, out, reduced)


@dataclass(eq=False)
class ExternBuffer(Buffer):
    """The output of ``op(*args, **kwargs)`` run eagerly; ``args`` hold ``Buffer``s where tensors go.

    ``index`` picks one output of an op that returns several (``None``: the op returns one tensor)."""

    op: Any = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    reason: str = ""
    origins: list[str] = field(default_factory=list)


@dataclass(eq=False)
class MultiOutput(Buffer):
    """Element ``index`` of the tuple an ``ExternBuffer`` returns."""

    source: ExternBuffer = None  # type: ignore[assignment]
    index: int = 0


@dataclass(eq=False)
class AliasBuffer(Buffer):
    """An output that is a view of a graph input, returned as a view (as eager does), not as a copy.

    ``layout`` is the view's, ``offset_delta`` its storage offset less the input's."""

    source: InputBuffer = None  # type: ignore[assignment]
    offset_delta: int = 0


@dataclass(eq=False)
class SizeInput:
    """A graph input that is a size (a ``SymInt``): the wrapper binds ``expr``'s symbol from it."""

    name: str
    expr: sympy.Expr


@dataclass(eq=False)
class TensorBox:
    """A value by its loader; ``buffer`` is set when the value is (only) a buffer read as it is."""

    size: tuple[int, ...]
    dtype: Any
    loader: Callable[[Index], Any]
    buffer: Buffer | None = None
    ops_count: int = 0
    # the graph nodes whose code this box holds ("name = target"), for comments in the kernels
    origins: list[str] = field(default_factory=list)

    @staticmethod
    def of(buffer: Buffer) -> TensorBox:
        return TensorBox(tuple(buffer.size), buffer.dtype, buffer.make_loader(), buffer)
