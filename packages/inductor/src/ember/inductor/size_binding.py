"""Binding a graph's size symbols from a call's inputs, and checking what the kernels assume.

At compile time the inputs' sizes (and strides that are symbols of their own, and size inputs) are
read into a generated Python function: each symbol is read once from the first place that holds it
alone; every other size is compared with its expression; the guards the trace took on the sizes
(``ShapeEnv.guards``: equalities, divisibility, comparisons) and each symbol's range (a size symbol
is at least 2: sizes 0 and 1 are specialized) are checked, and the dtypes. A call that breaks an
assumption raises a ``SizeAssumptionError`` (a ``RuntimeError``) naming it, before any kernel runs;
one that keeps them gets the symbols' values in a tuple, in the order of ``symbols``, which the
kernels take as arguments, and the positions of the tensor inputs whose strides differ from the ones
the kernels were built for (the wrapper copies those to that layout).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import sympy

from ember.inductor.ir import InputBuffer, SizeInput
from ember.inductor.sizevars import pyexpr, sort_symbols

log = logging.getLogger(__name__)


class SizeBinder:
    """``bind(args) -> (values, moved)`` for the graph's inputs (a list as the compiled graph takes it)."""

    def __init__(self, inputs: list, shape_env: Any) -> None:
        self.symbols: list[sympy.Symbol] = []
        lines: list[str] = []
        scope: dict[str, Any] = {"_fail": _fail, "_fail_dtype": _fail_dtype}
        bound: set[sympy.Symbol] = set()
        later: list[tuple[str, Any, str]] = []  # (python value, expression, what it is)

        def place(value: str, expr: Any, what: str) -> None:
            expr = sympy.sympify(expr)
            if expr.is_Symbol and expr not in bound:
                bound.add(expr)
                lines.append(f"    {expr.name} = {value}")
            else:
                later.append((value, expr, what))

        for i, spec in enumerate(inputs):
            if isinstance(spec, InputBuffer):
                scope[f"D{i}"] = spec.dtype
                lines.append(f"    t{i} = args[{i}]")
                lines.append(f"    z{i} = t{i}._shape")
                lines.append(f"    w{i} = t{i}._stride")
                lines.append(f"    if len(z{i}) != {len(spec.size)} or t{i}.dtype is not D{i}:")
                lines.append(f"        _fail_dtype({spec.name!r}, t{i}, {len(spec.size)}, D{i})")
                for d, n in enumerate(spec.size):
                    place(f"z{i}[{d}]", n, f"{spec.name}.size({d})")
                for d, st in enumerate(spec.layout.stride):
                    if _is_symbol(st) and st not in bound and not any(_mentions(n, st) for n in spec.size):
                        place(f"w{i}[{d}]", st, f"{spec.name}.stride({d})")
            elif isinstance(spec, SizeInput):
                place(f"args[{i}]", spec.expr, spec.name)
            else:  # a value the graph was traced with
                scope[f"V{i}"] = spec
                lines.append(f"    if args[{i}] != V{i}:")
                lines.append(f"        _fail('input {i} == ' + repr(V{i}))")
        # a symbol held only inside expressions: solved from a linear one
        for value, expr, _ in list(later):
            missing = [s for s in expr.free_symbols if s not in bound]
            if len(missing) == 1:
                v = sympy.Symbol("_value", integer=True)
                solutions = sympy.solve(sympy.Eq(expr, v), missing[0])
                if len(solutions) == 1:
                    bound.add(missing[0])
                    lines.append(f"    _value = {value}")
                    lines.append(f"    {missing[0].name} = {pyexpr(solutions[0])}")
        checks: list[tuple[str, str]] = []
        for value, expr, what in later:
            if not expr.free_symbols <= bound:
                raise NotImplementedError(f"the size {what} = {expr} has symbols no input gives")
            checks.append((f"{value} == {pyexpr(expr)}", f"{what} == {expr}"))
        symbols = sort_symbols(bound)
        checks += _guard_checks(shape_env, bound)
        for cond, text in checks:
            lines.append(f"    if not ({cond}):")
            lines.append(f"        _fail({text!r})")
        # strides the kernels were built for (dims of size 1 aside)
        lines.append("    moved = None")
        for i, spec in enumerate(inputs):
            if isinstance(spec, InputBuffer):
                conds = [f"w{i}[{d}] != {pyexpr(st)}" for d, (st, n) in enumerate(zip(spec.layout.stride, spec.size,
                         strict=True)) if n != 1]  # fmt: skip
                if conds:
                    lines.append(f"    if {' or '.join(conds)}:")
                    lines.append(f"        moved = (moved or ()) + ({i},)")
        lines.append(f"    return ({''.join(s.name + ', ' for s in symbols)}), moved")
        self.symbols = symbols
        self.source = "def bind(args):\n" + "\n".join(lines) + "\n"
        exec(compile(self.source, "<ember.inductor size binding>", "exec"), scope)
        self.bind: Callable[[list], tuple] = scope["bind"]


def _is_symbol(e: Any) -> bool:
    return isinstance(e, sympy.Symbol)


def _mentions(e: Any, s: sympy.Symbol) -> bool:
    return isinstance(e, sympy.Basic) and s in e.free_symbols


def _guard_checks(shape_env: Any, bound: set) -> list[tuple[str, str]]:
    """The trace's guards and the symbols' ranges, as Python conditions over the bound symbols."""
    from ember.fx.experimental.guard_printing import PythonPrinter

    printer = PythonPrinter({s: s.name for s in bound})
    out: list[tuple[str, str]] = []
    seen: set = set()
    for guard in shape_env.guards if shape_env is not None else ():
        expr = shape_env.simplify(guard.expr)
        if expr is sympy.true or expr in seen or not expr.free_symbols or not expr.free_symbols <= bound:
            continue
        seen.add(expr)
        try:
            out.append((printer.doprint(expr), str(expr)))
        except (KeyError, NotImplementedError) as e:  # pragma: no cover - printers cover the guard kinds
            raise NotImplementedError(f"the size guard {expr} has no Python form: {e}") from e
    for s in sort_symbols(bound):
        # the code generator's decisions take every size symbol to be at least 2 (sizevars.py)
        r = shape_env.var_to_range.get(s) if shape_env is not None else None
        lower = max(2, int(r.lower)) if r is not None and r.lower.is_finite else 2
        out.append((f"{s.name} >= {lower}", f"{s.name} >= {lower}"))
        if r is not None and r.upper.is_finite:
            out.append((f"{s.name} <= {int(r.upper)}", f"{s.name} <= {int(r.upper)}"))
    return out


def _fail_dtype(name: str, t: Any, ndim: int, dtype: Any) -> None:
    raise RuntimeError(
        f"compiled graph expected {name} with {ndim} dims of {dtype}, got {len(t._shape)} dims of {t.dtype}"
    )


class SizeAssumptionError(RuntimeError):
    """A call's sizes break an assumption the compiled graph's trace took."""


def _fail(what: str) -> None:
    raise SizeAssumptionError(
        f"compiled graph called with inputs that break an assumption its kernels were compiled under: {what} "
        "does not hold (sizes 0 and 1 and sizes that were equal in the trace are specialized); compile again "
        "for these inputs"
    )
