"""The sympy pieces symbolic shapes need: Python's integer division, truncation, value ranges.

``FloorDiv`` is Python's ``//`` on integers (sympy's ``floor(a/b)`` would do, but prints badly and
simplifies slowly); ``Mod`` is sympy's own, which already has Python's sign rule. ``ValueRanges``
is a closed interval with infinite ends, and ``bound(expr, ranges)`` the interval an expression
takes when each symbol lies in its range: enough to decide ``s0 >= 1`` for a size without a guard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy

INF = sympy.oo


class FloorDiv(sympy.Function):
    """``a // b`` with Python's rounding toward minus infinity."""

    is_integer = True
    nargs = (2,)

    @classmethod
    def eval(cls, a, b):
        if b.is_zero:
            raise ZeroDivisionError("integer division or modulo by zero")
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) // int(b))
        if b == 1:
            return a
        if a.is_zero:
            return sympy.Integer(0)
        if b.is_Integer:
            # A sum or product whose integer coefficients b divides: divide them exactly.
            terms = sympy.Add.make_args(a)
            if all(
                sympy.Mul.make_args(t)[0].is_Integer and int(sympy.Mul.make_args(t)[0]) % int(b) == 0 for t in terms
            ):
                return sympy.Add(*[t / b for t in terms])
            # Integer multiples of b plus a constant c: (b*k + c) // b == k + c // b for any integer k
            # (an index 2*q + 1 of a loop split in two, halved).
            constant, rest = a.as_coeff_Add()
            if constant.is_Integer and rest.is_integer:
                multiples = sympy.Add.make_args(rest)
                if all(
                    sympy.Mul.make_args(t)[0].is_Integer and int(sympy.Mul.make_args(t)[0]) % int(b) == 0
                    for t in multiples
                ):
                    return sympy.Add(*[t / b for t in multiples]) + int(constant) // int(b)
        if isinstance(a, FloorDiv) and b.is_Integer and a.args[1].is_Integer and int(b) > 0 and int(a.args[1]) > 0:
            return FloorDiv(a.args[0], a.args[1] * b)
        return None

    def _sympystr(self, printer) -> str:
        a, b = self.args
        return f"({printer.parenthesize(a, 40)}//{printer.parenthesize(b, 40)})"


class TruncToInt(sympy.Function):
    """``int(x)`` of a float: rounding toward zero."""

    is_integer = True
    nargs = (1,)

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sympy.Integer(math.trunc(float(x)))
        if x.is_integer:
            return x
        return None


@dataclass(frozen=True)
class ValueRanges:
    """The closed interval ``[lower, upper]``; either end may be infinite (``sympy.oo``)."""

    lower: sympy.Expr
    upper: sympy.Expr

    @staticmethod
    def unknown() -> ValueRanges:
        return ValueRanges(-INF, INF)

    @staticmethod
    def point(value) -> ValueRanges:
        v = sympy.sympify(value)
        return ValueRanges(v, v)

    def is_point(self) -> bool:
        return self.lower == self.upper

    def intersect(self, other: ValueRanges) -> ValueRanges:
        return ValueRanges(sympy.Max(self.lower, other.lower), sympy.Min(self.upper, other.upper))

    def __contains__(self, value) -> bool:
        return bool(self.lower <= value) and bool(value <= self.upper)

    def __repr__(self) -> str:
        return f"VR[{self.lower}, {self.upper}]"


def _mul_bound(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    # 0 * oo is 0 here: a factor pinned at zero makes the product zero whatever the other does.
    if a == 0 or b == 0:
        return sympy.Integer(0)
    return a * b


def _products(x: ValueRanges, y: ValueRanges) -> ValueRanges:
    values = [_mul_bound(p, q) for p in (x.lower, x.upper) for q in (y.lower, y.upper)]
    return ValueRanges(min(values, key=_key), max(values, key=_key))


def _key(v: sympy.Expr) -> float:
    return float(v) if v.is_finite else (math.inf if v == INF else -math.inf)


def bound(expr: sympy.Expr, ranges: dict) -> ValueRanges:
    """The interval ``expr`` lies in when each symbol lies in ``ranges[symbol]`` (else anywhere)."""
    if expr.is_Number:
        return ValueRanges.point(expr)
    if expr.is_Symbol:
        return ranges.get(expr) or ValueRanges.unknown()
    if isinstance(expr, sympy.Add):
        lower, upper = sympy.Integer(0), sympy.Integer(0)
        for arg in expr.args:
            r = bound(arg, ranges)
            lower, upper = lower + r.lower, upper + r.upper
        return ValueRanges(lower, upper)
    if isinstance(expr, sympy.Mul):
        out = ValueRanges.point(1)
        for arg in expr.args:
            out = _products(out, bound(arg, ranges))
        return out
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer:
        base, n = bound(expr.base, ranges), int(expr.exp)
        if n >= 0:
            if base.lower >= 0:
                return ValueRanges(base.lower**n, base.upper**n)
            if n % 2 == 0:
                high = max(abs(base.lower), abs(base.upper), key=_key)
                return ValueRanges(sympy.Integer(0) if base.upper >= 0 else base.upper**n, high**n)
            return ValueRanges(base.lower**n, base.upper**n)
        if base.lower > 0:  # 1/x of a positive x
            return ValueRanges(
                sympy.Integer(0) if base.upper == INF else base.upper**n, base.lower**n if base.lower.is_finite else 0
            )
        return ValueRanges.unknown()
    if isinstance(expr, FloorDiv):
        a, b = bound(expr.args[0], ranges), bound(expr.args[1], ranges)
        if b.is_point() and b.lower.is_Integer and b.lower > 0:  # floor(x / c) is monotone in x
            return ValueRanges(sympy.floor(a.lower / b.lower), sympy.floor(a.upper / b.lower))
        if b.lower > 0 and a.lower >= 0:
            low = sympy.floor(a.lower / b.upper) if b.upper.is_finite else sympy.Integer(0)
            high = sympy.floor(a.upper / b.lower) if a.upper.is_finite else INF
            return ValueRanges(low, high)
        return ValueRanges.unknown()
    if isinstance(expr, sympy.Mod):
        b = bound(expr.args[1], ranges)
        if b.lower > 0:
            return ValueRanges(sympy.Integer(0), b.upper - 1 if b.upper.is_finite else INF)
        return ValueRanges.unknown()
    if isinstance(expr, sympy.Max):
        parts = [bound(a, ranges) for a in expr.args]
        return ValueRanges(max((p.lower for p in parts), key=_key), max((p.upper for p in parts), key=_key))
    if isinstance(expr, sympy.Min):
        parts = [bound(a, ranges) for a in expr.args]
        return ValueRanges(min((p.lower for p in parts), key=_key), min((p.upper for p in parts), key=_key))
    if isinstance(expr, sympy.Abs):
        r = bound(expr.args[0], ranges)
        if r.lower >= 0:
            return r
        if r.upper <= 0:
            return ValueRanges(-r.upper, -r.lower)
        return ValueRanges(sympy.Integer(0), max(-r.lower, r.upper, key=_key))
    if isinstance(expr, sympy.floor | sympy.ceiling | TruncToInt):
        r = bound(expr.args[0], ranges)
        return ValueRanges(sympy.floor(r.lower), sympy.ceiling(r.upper))
    return ValueRanges.unknown()


def decide(expr: sympy.Basic, ranges: dict) -> bool | None:
    """Whether the boolean ``expr`` holds for every value in ``ranges``; None if that depends."""
    if expr is sympy.true:
        return True
    if expr is sympy.false:
        return False
    if isinstance(expr, sympy.Not):
        inner = decide(expr.args[0], ranges)
        return None if inner is None else not inner
    if isinstance(expr, sympy.And):
        parts = [decide(a, ranges) for a in expr.args]
        if any(p is False for p in parts):
            return False
        return True if all(p is True for p in parts) else None
    if isinstance(expr, sympy.Or):
        parts = [decide(a, ranges) for a in expr.args]
        if any(p is True for p in parts):
            return True
        return False if all(p is False for p in parts) else None
    if not isinstance(expr, sympy.core.relational.Relational):
        # Any other boolean function (Equivalent, Xor, ...): settle the comparisons inside it.
        atoms = expr.atoms(sympy.core.relational.Relational)
        known = {a: decide(a, ranges) for a in atoms}
        known = {a: sympy.true if v else sympy.false for a, v in known.items() if v is not None}
        if not known:
            return None
        settled = expr.xreplace(known)
        return True if settled is sympy.true else False if settled is sympy.false else None
    difference = expr.lhs - expr.rhs
    r = bound(difference, ranges)
    lo, hi = r.lower, r.upper
    if isinstance(expr, sympy.Eq):
        if lo == hi == 0:
            return True
        if (lo > 0) == True or (hi < 0) == True:  # noqa: E712  (sympy booleans)
            return False
        if isinstance(difference, sympy.Mul) and all(_nonzero(f, ranges) for f in difference.args):
            return False  # a product of factors none of which can be zero (numel != 0)
        return None
    if isinstance(expr, sympy.Ne):
        inner = decide(sympy.Eq(expr.lhs, expr.rhs, evaluate=False), ranges)
        return None if inner is None else not inner
    if isinstance(expr, sympy.StrictLessThan):
        return _sure(hi < 0, lo >= 0)
    if isinstance(expr, sympy.LessThan):
        return _sure(hi <= 0, lo > 0)
    if isinstance(expr, sympy.StrictGreaterThan):
        return _sure(lo > 0, hi <= 0)
    if isinstance(expr, sympy.GreaterThan):
        return _sure(lo >= 0, hi < 0)
    return None


def _nonzero(expr: sympy.Expr, ranges: dict) -> bool:
    r = bound(expr, ranges)
    return (r.lower > 0) == True or (r.upper < 0) == True  # noqa: E712


def _sure(true_if, false_if) -> bool | None:
    if true_if == True:  # noqa: E712  (a sympy boolean, not a Python one)
        return True
    if false_if == True:  # noqa: E712
        return False
    return None
