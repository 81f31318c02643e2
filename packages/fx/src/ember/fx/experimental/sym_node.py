"""``SymNode``: the node behind a ``SymInt``, ``SymFloat`` or ``SymBool``.

A node is a sympy expression, the shape environment its symbols belong to, its Python type and its
*hint*: the value the expression has for the sizes at hand (None when an unbacked symbol, one
without a value, takes part). Arithmetic builds new nodes: the expression with sympy (cached, as
sympy is slow), the hint with plain Python. Asking for a Python value (``bool_``, ``int_``,
``float_``) goes to the shape environment, which answers from what it already knows or records a
guard on the hint.
"""

from __future__ import annotations

import math
import operator
from functools import lru_cache
from typing import Any

import sympy

from ember.fx.experimental._sympy import FloorDiv, TruncToInt


def _sym(value: Any) -> sympy.Basic:
    if type(value) is bool:
        return sympy.true if value else sympy.false
    if isinstance(value, int):
        return sympy.Integer(value)
    return sympy.Float(value)


# Expression builders, cached by their operands: meta kernels repeat the same few sums and products.
@lru_cache(maxsize=8192, typed=True)
def _build(op: str, a: sympy.Basic, b: sympy.Basic | None = None) -> sympy.Basic:
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "floordiv":
        return FloorDiv(a, b)
    if op == "mod":
        return sympy.Mod(a, b)
    if op == "truediv":
        return a / b
    if op == "pow":
        return a**b
    if op == "neg":
        return -a
    if op == "abs":
        return sympy.Abs(a)
    if op == "max":
        return sympy.Max(a, b)
    if op == "min":
        return sympy.Min(a, b)
    if op == "eq":
        return sympy.Eq(a, b)
    if op == "ne":
        return sympy.Ne(a, b)
    if op == "bool_eq":
        return sympy.Equivalent(a, b)
    if op == "bool_ne":
        return sympy.Xor(a, b)
    if op == "lt":
        return sympy.Lt(a, b)
    if op == "le":
        return sympy.Le(a, b)
    if op == "gt":
        return sympy.Gt(a, b)
    if op == "ge":
        return sympy.Ge(a, b)
    if op == "and":
        return sympy.And(a, b)
    if op == "or":
        return sympy.Or(a, b)
    if op == "not":
        return sympy.Not(a)
    if op == "floor":
        return sympy.floor(a)
    if op == "ceil":
        return sympy.ceiling(a)
    if op == "trunc":
        return TruncToInt(a)
    raise AssertionError(op)


def _hint(fn, *hints):
    return None if any(h is None for h in hints) else fn(*hints)


def _python_floordiv(a, b):
    return a // b


class SymNode:
    """A sympy expression over a ``ShapeEnv``'s symbols, with its Python type and hint."""

    __slots__ = ("_expr", "_seen", "constant", "hint", "pytype", "shape_env")

    def __init__(self, expr: sympy.Basic, shape_env: Any, pytype: type, hint: Any, constant: Any = None) -> None:
        self._expr = expr
        self._seen = 0  # how many replacements the environment had when _expr was last simplified
        self.shape_env = shape_env
        self.pytype = pytype
        self.hint = hint
        self.constant = constant

    @property
    def expr(self) -> sympy.Basic:
        """The expression, with the replacements guards have made since (``s1`` is ``s0`` once
        ``s1 == s0`` was guarded), as PyTorch's ``SymNode.expr`` gives it."""
        count = len(self.shape_env.replacements)
        if count != self._seen:
            self._expr = self.shape_env.simplify(self._expr)
            self._seen = count
        return self._expr

    # -- what it is ---------------------------------------------------------------------------

    def is_int(self) -> bool:
        return self.pytype is int

    def is_float(self) -> bool:
        return self.pytype is float

    def is_bool(self) -> bool:
        return self.pytype is bool

    def is_nested_int(self) -> bool:
        return False

    def has_hint(self) -> bool:
        return self.hint is not None

    def maybe_as_int(self) -> int | None:
        return int(self.expr) if self.expr.is_Integer else None

    def str(self) -> str:
        return str(self.expr)

    def __repr__(self) -> str:
        return f"SymNode({self.expr}, {self.pytype.__name__}, hint={self.hint})"

    # -- making nodes -------------------------------------------------------------------------

    def _new(self, expr: sympy.Basic, pytype: type, hint: Any) -> SymNode:
        return SymNode(expr, self.shape_env, pytype, hint)

    def wrap_int(self, num: int) -> SymNode:
        return SymNode(sympy.Integer(num), self.shape_env, int, num, constant=num)

    def wrap_float(self, num: float) -> SymNode:
        return SymNode(sympy.Float(num), self.shape_env, float, num, constant=num)

    def wrap_bool(self, value: bool) -> SymNode:
        return SymNode(sympy.true if value else sympy.false, self.shape_env, bool, value, constant=value)

    def _arith(self, op: str, fn, other: SymNode) -> SymNode:
        pytype = float if float in (self.pytype, other.pytype) else int
        return self._new(_build(op, self.expr, other.expr), pytype, _hint(fn, self.hint, other.hint))

    # -- arithmetic ---------------------------------------------------------------------------

    def add(self, other: SymNode) -> SymNode:
        return self._arith("add", operator.add, other)

    def sub(self, other: SymNode) -> SymNode:
        return self._arith("sub", operator.sub, other)

    def mul(self, other: SymNode) -> SymNode:
        return self._arith("mul", operator.mul, other)

    def floordiv(self, other: SymNode) -> SymNode:
        if other.expr.is_zero:
            raise ZeroDivisionError("integer division or modulo by zero")
        if float in (self.pytype, other.pytype):
            return self.truediv(other).floor().sym_float()
        return self._arith("floordiv", _python_floordiv, other)

    def mod(self, other: SymNode) -> SymNode:
        if other.expr.is_zero:
            raise ZeroDivisionError("integer division or modulo by zero")
        return self._arith("mod", operator.mod, other)

    def truediv(self, other: SymNode) -> SymNode:
        if other.expr.is_zero:
            raise ZeroDivisionError("division by zero")
        return self._new(
            _build("truediv", self.expr, other.expr), float, _hint(operator.truediv, self.hint, other.hint)
        )

    def pow(self, other: SymNode) -> SymNode:
        if self.pytype is int and other.pytype is int:
            # An int to a natural power is an int; to a negative one, a float (as in Python).
            natural = other.shape_env.evaluate_expr(sympy.Ge(other.expr, 0), _hint(lambda h: h >= 0, other.hint))
            if natural:
                return self._arith("pow", operator.pow, other)
            return self.sym_float().pow(other.sym_float())
        return self._new(_build("pow", self.expr, other.expr), float, _hint(operator.pow, self.hint, other.hint))

    def neg(self) -> SymNode:
        return self._new(_build("neg", self.expr), self.pytype, _hint(operator.neg, self.hint))

    def abs(self) -> SymNode:
        return self._new(_build("abs", self.expr), self.pytype, _hint(abs, self.hint))

    def sym_max(self, other: SymNode) -> SymNode:
        return self._arith("max", max, other)

    def sym_min(self, other: SymNode) -> SymNode:
        return self._arith("min", min, other)

    def sym_float(self) -> SymNode:
        # The expression of an int serves as the float's: sympy's arithmetic is exact either way.
        return self._new(self.expr, float, _hint(float, self.hint))

    def sym_int(self) -> SymNode:
        return self._new(_build("trunc", self.expr), int, _hint(math.trunc, self.hint))

    def floor(self) -> SymNode:
        return self._new(_build("floor", self.expr), int, _hint(math.floor, self.hint))

    def ceil(self) -> SymNode:
        return self._new(_build("ceil", self.expr), int, _hint(math.ceil, self.hint))

    # -- comparisons and logic ----------------------------------------------------------------

    def _compare(self, op: str, fn, other: SymNode) -> SymNode:
        return self._new(_build(op, self.expr, other.expr), bool, _hint(fn, self.hint, other.hint))

    def eq(self, other: SymNode) -> SymNode:
        both_bool = self.pytype is bool and other.pytype is bool
        return self._compare("bool_eq" if both_bool else "eq", operator.eq, other)

    def ne(self, other: SymNode) -> SymNode:
        both_bool = self.pytype is bool and other.pytype is bool
        return self._compare("bool_ne" if both_bool else "ne", operator.ne, other)

    def lt(self, other: SymNode) -> SymNode:
        return self._compare("lt", operator.lt, other)

    def le(self, other: SymNode) -> SymNode:
        return self._compare("le", operator.le, other)

    def gt(self, other: SymNode) -> SymNode:
        return self._compare("gt", operator.gt, other)

    def ge(self, other: SymNode) -> SymNode:
        return self._compare("ge", operator.ge, other)

    def and_(self, other: SymNode) -> SymNode:
        return self._compare("and", lambda a, b: a and b, other)

    def or_(self, other: SymNode) -> SymNode:
        return self._compare("or", lambda a, b: a or b, other)

    def sym_not(self) -> SymNode:
        return self._new(_build("not", self.expr), bool, _hint(operator.not_, self.hint))

    def sym_ite(self, then_node: SymNode, else_node: SymNode) -> SymNode:
        expr = sympy.Piecewise((then_node.expr, self.expr), (else_node.expr, True))
        hint = None if self.hint is None else (then_node.hint if self.hint else else_node.hint)
        return self._new(expr, then_node.pytype, hint)

    # -- Python values: guards ----------------------------------------------------------------

    def bool_(self) -> bool:
        if self.constant is not None:
            return bool(self.constant)
        return bool(self.shape_env.evaluate_expr(self.expr, self.hint))

    def int_(self) -> int:
        if self.expr.is_Integer:
            return int(self.expr)
        return int(self.shape_env.evaluate_expr(self.expr, self.hint))

    def float_(self) -> float:
        if self.expr.is_Number:
            return float(self.expr)
        return float(self.shape_env.evaluate_expr(self.expr, self.hint))

    def guard_bool(self, file: str = "", line: int = 0) -> bool:
        return self.bool_()

    def guard_size_oblivious(self, file: str = "", line: int = 0) -> bool:
        """The condition decided as if every size-like unbacked symbol were at least 2."""
        if self.constant is not None:
            return bool(self.constant)
        return bool(self.shape_env.evaluate_expr(self.expr, self.hint, size_oblivious=True))

    def guard_int(self, file: str = "", line: int = 0) -> int:
        return self.int_()

    def guard_float(self, file: str = "", line: int = 0) -> float:
        return self.float_()

    def expect_true(self, file: str = "", line: int = 0) -> bool:
        """Assert the condition: a guard where there is a hint, else a runtime assertion to check later."""
        if self.constant is not None:
            return bool(self.constant)
        return self.shape_env.expect_true(self.expr, self.hint)

    def expect_size(self, file: str = "", line: int = 0) -> bool:
        result = self.ge(self.wrap_int(0)).expect_true(file, line)
        self.advise_is_size()
        return result

    def advise_is_size(self) -> None:
        self.shape_env.advise_is_size(self.expr)

    def statically_known_true(self) -> bool:
        return self.shape_env.maybe_evaluate_static(self.expr) is True
