"""Layouts of graph values as the code generator lays them out: shared by the graph lowering and by
the lowerings that make buffers of their own (scans, random ops)."""

from __future__ import annotations

from typing import Any

from ember.core.tensor import Tensor
from ember.inductor.ir import Layout, contiguous_strides
from ember.inductor.sizevars import as_expr, statically_equal

__all__ = ["_dense_layout", "_dense_layout_of_extern", "_hint"]


def _hint(value: Any) -> int:
    """A size's value at trace time (a ``SymInt``'s hint)."""
    node = getattr(value, "node", None)
    return int(node.hint) if node is not None and getattr(node, "hint", None) is not None else int(value)


def _dense_layout(val: Tensor) -> Layout:
    """The layout eager gives ``val`` when it is dense and non-overlapping, else a contiguous one."""
    size, stride = as_expr(tuple(val.shape)), as_expr(tuple(val.stride()))
    # strides ordered by their values at trace time; density must hold for every size
    dims = sorted(
        ((_hint(h), s, n) for h, s, n in zip(val.stride(), stride, size, strict=True) if n != 1), key=lambda t: t[0]
    )
    expected = 1
    for _, s, n in dims:
        if not statically_equal(s, expected):
            return Layout(size, contiguous_strides(size))
        expected = expected * n
    return Layout(size, stride)


def _dense_layout_of_extern(val: Tensor) -> Layout:
    # the wrapper passes an extern result's data pointer (its offset included): offset 0 here
    return Layout(as_expr(tuple(val.shape)), as_expr(tuple(val.stride())))
