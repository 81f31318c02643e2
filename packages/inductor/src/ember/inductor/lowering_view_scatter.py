"""The scatters that invert a view, as pointwise loops: ``slice_scatter`` and ``select_scatter``.

Functionalization writes a mutated view back into its base with these (``x[:, :3] += y`` becomes a
``slice_scatter`` of the updated slice into ``x``), and they are the gradients of slicing and
selecting. Each output element is ``src``'s element where the view selects it and ``self``'s
elsewhere: one ``where`` in a loop that fuses with what produces and reads it, no kernel of its own.
``src`` is read at an index kept in bounds outside the view (the ``where`` drops that value), as
``cat`` does. Static sizes only; over symbolic sizes the eager kernel runs.
"""

from __future__ import annotations

import math
from typing import Any

import sympy

from ember.core import dtypes as D
from ember.inductor.ir import Index
from ember.inductor.lowering import as_loader, make_box, register
from ember.inductor.sizevars import is_symbolic
from ember.inductor.virtualized import ops


def _static(what: str, *values: Any) -> None:
    if any(is_symbolic(v) for v in values):
        raise NotImplementedError(f"{what} over symbolic sizes")


@register("slice_scatter.default")
def slice_scatter(ctx, x, src, dim=0, start=None, end=None, step=1):
    dim = dim % len(x.size)
    n = x.size[dim]
    _static("slice_scatter", *x.size, *src.size, start, end)
    start, end, _ = slice(start, end, step).indices(n)
    m = len(range(start, end, step))
    lx, ls = as_loader(x, x.size, ctx.out_dtype), as_loader(src, src.size, ctx.out_dtype)
    if m == 0:
        return make_box(x.size, ctx.out_dtype, lx)
    last = start + step * (m - 1)
    # k * step >= start with k a multiple of m: below, the numerators stay nonnegative and the
    # position in src is (i - start) / step inside the slice
    k = m * math.ceil(start / (step * m))

    def loader(i: Index) -> Any:
        at = ops.index_expr(i[dim], D.int64)
        inside = ops.logical_and(ops.ge(at, ops.constant(start, D.int64)), ops.le(at, ops.constant(last, D.int64)))
        if step > 1:
            phase = ops.index_expr(sympy.Mod(i[dim] + k * step - start, step), D.int64)
            inside = ops.logical_and(inside, ops.eq(phase, ops.constant(0, D.int64)))
        j = list(i)
        j[dim] = sympy.Mod(sympy.floor((i[dim] + k * step - start) / step), m)
        return ops.where(inside, ls(j), lx(i))

    return make_box(x.size, ctx.out_dtype, loader)


@register("select_scatter.default")
def select_scatter(ctx, x, src, dim, index):
    dim = dim % len(x.size)
    _static("select_scatter", *x.size, index)
    index = index % x.size[dim]
    lx, ls = as_loader(x, x.size, ctx.out_dtype), as_loader(src, src.size, ctx.out_dtype)

    def loader(i: Index) -> Any:
        here = ops.eq(ops.index_expr(i[dim], D.int64), ops.constant(index, D.int64))
        return ops.where(here, ls([*i[:dim], *i[dim + 1 :]]), lx(i))

    return make_box(x.size, ctx.out_dtype, loader)
