"""Reduction loops merged where the body walks them as one: fewer, longer innermost loops.

A reduction over the last dims of a tensor is written as one loop per reduced dim, the innermost a
``#pragma omp simd`` loop. Over a batch norm's (N, H, W) at 32x32 that innermost loop is 32 long: two
vectors, then its lanes are added into the accumulator, once per 32 elements (the horizontal add
costs as much as the loads). Where every index of the body (loads, stores, index values) depends on
two adjacent dims ``a`` (outer) and ``b`` (inner) only through ``n_b * a + b``, the two loops are one
loop of ``n_a * n_b`` steps: the H and W of a contiguous image, the whole of an (H, W) plane.

The merge changes the order of a float sum's additions as a longer simd loop does, within the
tolerance any vectorized sum has; it depends on the loop sizes only, never on the thread count.
"""

from __future__ import annotations

from typing import Any

import sympy

from ember.inductor.ir import index_symbols
from ember.inductor.virtualized import ReadsHandler, is_indirect, set_ops_handler


class _Indexes(ReadsHandler):
    """Every index expression a body uses: loads, stores and index values."""

    def __init__(self) -> None:
        super().__init__()
        self.indexes: list[sympy.Expr] = []

    def load(self, name, index):
        self.indexes.append(index)
        return super().load(name, index)

    def store(self, name, index, value):
        self.indexes.append(index)
        return super().store(name, index, value)

    def store_reduction(self, name, index, value):
        self.indexes.append(index)
        return super().store_reduction(name, index, value)

    def index_expr(self, expr, dtype):
        self.indexes.append(expr)
        return super().index_expr(expr, dtype)


def _coefficients(expr: Any, symbols: list[sympy.Symbol]) -> list[int] | None:
    """The integer coefficients of ``symbols`` in ``expr`` when it is ``sum(c_i * s_i) + rest`` with
    ``rest`` free of them, else None."""
    expr = sympy.expand(sympy.sympify(expr))
    coeffs = [0] * len(symbols)
    wanted = set(symbols)
    for term in sympy.Add.make_args(expr):
        used = term.free_symbols & wanted
        if not used:
            continue
        c, rest = term.as_coeff_Mul()
        if rest not in wanted or not c.is_Integer:
            return None
        coeffs[symbols.index(rest)] += int(c)
    return coeffs


def merged_reduction_loops(buf: Any, index: list) -> tuple[list, list[tuple[str, int]]]:
    """``(rindex, loops)`` for ``buf.store_body(index, rindex)``: ``rindex`` holds, for each reduced dim,
    the symbol of its loop (the innermost dim of a merged run) or 0 (the others of the run), and
    ``loops`` the ``(name, size)`` of each loop, outermost first. Unmerged: one loop per dim."""
    sizes = list(buf.reduction_size)
    rindex = index_symbols("r", len(sizes))
    plain = (list(rindex), [(f"r{d}", n) for d, n in enumerate(sizes)])
    if len(sizes) < 2 or not all(isinstance(n, int) or getattr(n, "is_Integer", False) for n in sizes):
        return plain
    handler = _Indexes()
    with set_ops_handler(handler):
        buf.store_body(list(index), list(rindex))
    exprs = handler.indexes
    if any(is_indirect(e) for e in exprs):
        return plain
    coeffs = [_coefficients(e, rindex) for e in exprs]
    if any(c is None for c in coeffs):
        return plain
    # runs of dims: d joins the run of d + 1 when every index steps d as n_{d+1} steps of d + 1
    runs: list[list[int]] = [[len(sizes) - 1]]
    for d in range(len(sizes) - 2, -1, -1):
        inner = runs[0][0]
        if all(c[d] == int(sizes[inner]) * c[inner] for c in coeffs):
            runs[0].insert(0, d)
        else:
            runs.insert(0, [d])
    if len(runs) == len(sizes):
        return plain
    symbols = index_symbols("r", len(runs))
    out: list[Any] = [sympy.Integer(0)] * len(sizes)
    loops = []
    for sym, run in zip(symbols, runs, strict=True):
        out[run[-1]] = sym
        loops.append((sym.name, int(sympy.prod([sizes[d] for d in run]))))
    return out, loops


__all__ = ["merged_reduction_loops"]
