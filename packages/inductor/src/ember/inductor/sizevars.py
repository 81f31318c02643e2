"""Symbolic sizes: sizes, strides and offsets as sympy expressions over the graph's size symbols.

A graph traced with symbolic sizes (``dynamic=True``, ``mark_dynamic``, automatic dynamic) has
``SymInt`` sizes in its fake values; lowering turns them into sympy expressions (``s0``, ``2*s1``),
and a static size is a ``sympy.Integer``. Kernels take the symbols' values as arguments, so one
kernel serves every size; the wrapper binds the symbols from the actual inputs once per call.

Decisions that depend on sizes are made only when they hold for every value the symbols can take
(``statically_*``); the ShapeEnv's symbols for sizes are at least 2 (0 and 1 are specialized), which
the decision procedure uses. An undecided question gets the answer that is safe for all sizes (no
fusion, a run-time ``if`` for parallel loops).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sympy


def as_expr(value: Any) -> Any:
    """``value`` with ``SymInt``s replaced by their (simplified) sympy expressions; ints stay ints."""
    node = getattr(value, "node", None)
    if node is not None and hasattr(node, "expr"):
        expr = _exact_floordivs(node.expr)
        return int(expr) if expr.is_Integer else expr
    if isinstance(value, sympy.Integer):
        return int(value)
    if isinstance(value, list | tuple):
        return type(value)(as_expr(v) for v in value)
    return value


def _exact_floordivs(expr: Any) -> Any:
    """``expr`` with each floor division that divides exactly as polynomials (``s0*s1 // s1``, the size a
    ``view(-1, n)`` infers) replaced by its quotient, so that sizes compare equal to the plain symbols."""
    if not isinstance(expr, sympy.Basic) or not any(
        type(e).__name__ == "FloorDiv" for e in sympy.preorder_traversal(expr)
    ):
        return expr

    def exact(e: Any) -> Any:
        if type(e).__name__ != "FloorDiv":
            return e
        q = sympy.cancel(e.args[0] / e.args[1])
        free = sorted(q.free_symbols, key=str)
        if q.is_Integer or (
            free and q.is_polynomial(*free) and all(c.is_Integer for c in sympy.Poly(q, *free).coeffs())
        ):
            return q
        return e

    return expr.replace(lambda e: type(e).__name__ == "FloorDiv", exact)


@dataclass(frozen=True)
class FloatSize:
    """A float computed from sizes (a ``SymFloat`` such as ``s0 / 2``): a ratio of integer expressions,
    which a kernel computes in floating point."""

    num: Any
    den: Any


def float_size(expr: sympy.Expr) -> FloatSize:
    num, den = sympy.fraction(sympy.together(expr))
    if not (num.is_integer and den.is_integer):
        raise NotImplementedError(f"the float size expression {expr} is not a ratio of integer sizes")
    return FloatSize(num, den)


def is_symbolic(value: Any) -> bool:
    return isinstance(value, sympy.Basic) and not value.is_number


def shape_env_of(value: Any) -> Any:
    node = getattr(value, "node", None)
    return getattr(node, "shape_env", None)


def _shifted(expr: sympy.Expr) -> sympy.Expr:
    # size symbols are >= 2: substitute s = 2 + t with t >= 0
    symbols = sorted((s for s in expr.free_symbols if s.name.startswith("s")), key=str)
    return sympy.expand(expr.xreplace({s: s + 2 for s in symbols}))


def statically_nonneg(expr: Any) -> bool:
    """Whether ``expr >= 0`` for every value of its symbols (sufficient test: after ``s -> s + 2`` a
    polynomial with non-negative coefficients, the index symbols being non-negative)."""
    if isinstance(expr, int):
        return expr >= 0
    expr = sympy.sympify(expr)
    if expr.is_number:
        return bool(expr >= 0)
    return _nonneg(expr)


@functools.lru_cache(maxsize=4096)
def _nonneg(expr: sympy.Expr) -> bool:
    shifted = _shifted(expr)
    if shifted.is_number:
        return bool(shifted >= 0)
    try:
        poly = sympy.Poly(shifted, *sorted(shifted.free_symbols, key=str))
    except sympy.PolynomialError:
        return False
    if not all(s.is_nonnegative for s in shifted.free_symbols):
        return False
    return all(c.is_number and c >= 0 for c in poly.coeffs())


def statically_equal(a: Any, b: Any) -> bool:
    """Whether ``a == b`` for every value of the symbols."""
    if type(a) is int and type(b) is int:
        return a == b
    return sympy.expand(sympy.sympify(a) - sympy.sympify(b)) == 0


def statically_ge(a: Any, b: Any) -> bool:
    if type(a) is int and type(b) is int:
        return a >= b
    return statically_nonneg(sympy.sympify(a) - sympy.sympify(b))


def decide_ge(a: Any, b: Any) -> bool | None:
    """``a >= b`` when it is decided for every size, else None."""
    if type(a) is int and type(b) is int:
        return a >= b
    if statically_ge(a, b):
        return True
    if statically_nonneg(sympy.sympify(b) - sympy.sympify(a) - 1):
        return False
    return None


def at_least_one(n: Any) -> Any:
    if isinstance(n, sympy.Basic) and not n.is_number:
        return n  # a size symbol is at least 2
    return max(int(n), 1)


def exact_div(a: Any, b: Any) -> Any:
    if not is_symbolic(a) and not is_symbolic(b):
        return int(a) // int(b) if b else 0
    q = sympy.cancel(sympy.sympify(a) / sympy.sympify(b))
    return int(q) if q.is_Integer else q


class ExprPrinter:
    """Size and index expressions as source code. The forms both languages share are here; a
    language's printer says how it divides (sizes and indexes are non-negative, so C's truncating
    division is floor division too) and prints what else it knows in ``other``."""

    div = "//"
    language = "Python"
    # a language whose max/min take two operands names them here; Max and Min of more fold left
    minmax: tuple[str, str] | None = None

    def __call__(self, e: Any) -> str:
        e = sympy.sympify(e)
        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            return e.name
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(self(a) for a in e.args) + ")"
        if isinstance(e, sympy.Mul):
            num, den = sympy.fraction(e)
            if den != 1:
                return f"({self(num)} {self.div} {self(den)})"
            return "(" + " * ".join(self(a) for a in e.args) + ")"
        if isinstance(e, sympy.floor):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            return f"({self(num)} {self.div} {self(den)})" if den != 1 else self(num)
        if isinstance(e, sympy.Mod):
            return f"({self(e.args[0])} % {self(e.args[1])})"
        if type(e).__name__ == "FloorDiv":  # ember.fx's FloorDiv of sizes
            return f"({self(e.args[0])} {self.div} {self(e.args[1])})"
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
            return "(" + " * ".join([self(e.base)] * int(e.exp)) + ")"
        if self.minmax is not None and isinstance(e, sympy.Max | sympy.Min):
            fn = self.minmax[0] if isinstance(e, sympy.Max) else self.minmax[1]
            out = self(e.args[0])
            for a in e.args[1:]:
                out = f"{fn}({out}, {self(a)})"
            return out
        return self.other(e)

    def other(self, e: Any) -> str:
        raise NotImplementedError(f"size expression {e} has no {self.language} form")


_RELATIONS = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Lt: "<", sympy.Le: "<=", sympy.Gt: ">", sympy.Ge: ">="}


class PythonPrinter(ExprPrinter):
    """Python source (the symbols as local names): also ceilings, min/max, comparisons and logic."""

    def other(self, e: Any) -> str:
        if isinstance(e, sympy.ceiling):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            return f"(-((-{self(num)}) // {self(den)}))" if den != 1 else self(num)
        if isinstance(e, sympy.Max | sympy.Min):
            return f"{type(e).__name__.lower()}({', '.join(self(a) for a in e.args)})"
        for kind, op in _RELATIONS.items():
            if isinstance(e, kind):
                return f"({self(e.lhs)} {op} {self(e.rhs)})"
        if isinstance(e, sympy.And | sympy.Or):
            op = " and " if isinstance(e, sympy.And) else " or "
            return "(" + op.join(self(a) for a in e.args) + ")"
        if isinstance(e, sympy.Not):
            return f"(not {self(e.args[0])})"
        if e is sympy.true or e is sympy.false:
            return str(bool(e))
        return super().other(e)


pyexpr = PythonPrinter()


def size_symbols(exprs: Any) -> set[sympy.Symbol]:
    out: set[sympy.Symbol] = set()
    for e in exprs:
        if isinstance(e, sympy.Basic):
            out |= e.free_symbols
    return out


def sort_symbols(symbols: Any) -> list[sympy.Symbol]:
    return sorted(symbols, key=lambda s: (s.name[0], int(s.name[1:]) if s.name[1:].isdigit() else 0, s.name))


def evaluator(symbols: list, exprs: Any) -> Any:
    """``f(values) -> tuple`` of ``exprs`` (ints and size expressions) at the symbols' ``values``."""
    exprs = list(exprs)
    if not any(is_symbolic(e) for e in exprs):
        const = tuple(int(e) for e in exprs)
        return lambda values: const
    names = "".join(s.name + ", " for s in symbols)
    body = "".join(pyexpr(e) + ", " for e in exprs)
    scope: dict[str, Any] = {}
    exec(f"def f(values):\n    ({names}) = values\n    return ({body})\n", scope)
    return scope["f"]
