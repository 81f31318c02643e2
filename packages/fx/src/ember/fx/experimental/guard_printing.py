"""Printing sympy conditions as Python source over the inputs they came from.

``PythonPrinter({s0: "L['x'].size()[0]", s1: "L['y'].size()[0]"}).doprint(Eq(s0, 2*s1))`` gives
``"L['x'].size()[0] == 2*L['y'].size()[0]"``: plain Python that ``eval`` runs with only the inputs
in scope (``//`` and ``%`` have Python's semantics, as ``FloorDiv`` and ``Mod`` do). Sums and
products print as sympy prints them; only symbols, relations, logic and the integer functions
differ.
"""

from __future__ import annotations

import sympy
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

_RELATIONS = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class PythonPrinter(StrPrinter):
    def __init__(self, names: dict) -> None:
        super().__init__()
        self.names = names

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        if expr not in self.names:
            raise KeyError(f"no source for the symbol {expr}")
        return self.names[expr]

    def _print_Relational(self, expr) -> str:
        op = _RELATIONS[expr.rel_op]
        lhs = self.parenthesize(expr.lhs, PRECEDENCE["Relational"] + 1)
        rhs = self.parenthesize(expr.rhs, PRECEDENCE["Relational"] + 1)
        return f"{lhs} {op} {rhs}"

    def _print_BooleanTrue(self, expr) -> str:
        return "True"

    def _print_BooleanFalse(self, expr) -> str:
        return "False"

    def _print_Not(self, expr) -> str:
        return f"not ({self._print(expr.args[0])})"

    def _print_And(self, expr) -> str:
        return " and ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Or(self, expr) -> str:
        return " or ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Equivalent(self, expr) -> str:
        a, *rest = expr.args
        return " and ".join(f"bool({self._print(a)}) == bool({self._print(b)})" for b in rest)

    def _print_Xor(self, expr) -> str:
        return " != ".join(f"bool({self._print(a)})" for a in expr.args)

    def _print_FloorDiv(self, expr) -> str:
        a, b = (self.parenthesize(x, PRECEDENCE["Mul"] + 1) for x in expr.args)
        return f"({a}//{b})"

    def _print_Mod(self, expr) -> str:
        a, b = (self.parenthesize(x, PRECEDENCE["Mul"] + 1) for x in expr.args)
        return f"({a} % {b})"

    def _print_TruncToInt(self, expr) -> str:
        return f"int({self._print(expr.args[0])})"

    def _print_floor(self, expr) -> str:
        return f"int(({self._print(expr.args[0])})//1)"

    def _print_ceiling(self, expr) -> str:
        return f"int(-((-({self._print(expr.args[0])}))//1))"

    def _print_Max(self, expr) -> str:
        return f"max({', '.join(self._print(a) for a in expr.args)})"

    def _print_Min(self, expr) -> str:
        return f"min({', '.join(self._print(a) for a in expr.args)})"

    def _print_Abs(self, expr) -> str:
        return f"abs({self._print(expr.args[0])})"

    def _print_Piecewise(self, expr) -> str:
        (then, cond), (other, _) = expr.args[0], expr.args[-1]
        return f"({self._print(then)} if {self._print(cond)} else {self._print(other)})"

    def _print_Rational(self, expr) -> str:
        return f"({expr.p}/{expr.q})"

    def _print_Pow(self, expr, rational: bool = False) -> str:
        base = self.parenthesize(expr.base, PRECEDENCE["Pow"])
        if expr.exp == -1:
            return f"(1/{base})"
        return f"{base}**{self.parenthesize(expr.exp, PRECEDENCE['Pow'])}"

    def _print_Float(self, expr) -> str:
        # Every bit of the double: a guard on a float must compare equal to what Python computes.
        return repr(float(expr))
