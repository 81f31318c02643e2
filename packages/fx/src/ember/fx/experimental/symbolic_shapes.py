"""Symbolic shapes: ``ShapeEnv``, the home of the symbols that sizes become under dynamic shapes.

A tensor's sizes become symbols (``s0``, ``s1``, ... for sizes known from an input, *backed* by a
value; ``u0``, ``u1``, ... for sizes an op computes from data, *unbacked*). Meta kernels run on
``SymInt`` sizes; wherever one takes a Python decision on them (``if size == 1``) the decision is
taken on the hint and recorded as a **guard**, a condition on the inputs under which the traced
program stays valid. ``produce_guards`` prints those guards as Python expressions over the inputs'
sources (``"L['x'].size()[0] == L['y'].size()[0]"``) that a compiled function checks before it
reuses a graph.

Before recording a guard the environment tries to decide the condition without one: after the
replacements earlier guards made (``s1 == s0`` replaces ``s1`` by ``s0``), from the facts already
guarded, and from each symbol's value range (a backed size is at least 2, as sizes 0 and 1 are
specialized). A decision about an unbacked symbol that none of this settles raises
``GuardOnDataDependentSymNode``: there is no value to guard on.

As in PyTorch, equal sizes share one symbol (*duck sizing*) and sizes 0 and 1 stay ints.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy

from ember.core.symbolic import GuardOnDataDependentSymNode, SymBool, SymFloat, SymInt, is_symbolic
from ember.fx.experimental._sympy import ValueRanges, bound, decide
from ember.fx.experimental.guard_printing import PythonPrinter
from ember.fx.experimental.sym_node import SymNode

__all__ = [
    "DimDynamic",
    "GuardOnDataDependentSymNode",
    "ShapeEnv",
    "ShapeGuard",
    "definitely_false",
    "definitely_true",
    "free_symbols",
    "guard_bool",
    "guard_float",
    "guard_int",
    "guard_or_false",
    "guard_or_true",
    "guard_size_oblivious",
    "has_free_symbols",
    "hint_int",
    "is_concrete_bool",
    "is_concrete_int",
    "is_symbolic",
    "statically_known_true",
]


class DimDynamic(enum.Enum):
    """How ``create_symbol`` treats a dimension (PyTorch's names)."""

    DYNAMIC = 0  # its own symbol, whatever other sizes equal it
    DUCK = 1  # the symbol of an equal size made before, else a new one
    STATIC = 2  # the int itself
    SIZE_LIKE_UNBACKED = 3
    INFER_STRIDE = 4
    OBLIVIOUS_SIZE = 5


@dataclass(frozen=True)
class ShapeGuard:
    expr: sympy.Basic
    size_oblivious: bool = False

    def __str__(self) -> str:
        return str(self.expr)


@dataclass(frozen=True)
class RuntimeAssert:
    expr: sympy.Basic
    msg: str = ""


def _source_name(source: Any) -> str:
    if isinstance(source, str):
        return source
    name = getattr(source, "name", None)
    return name() if callable(name) else str(name if name is not None else source)


def _negate(expr: sympy.Basic) -> sympy.Basic:
    return sympy.Not(expr)


def _py_value(expr: sympy.Basic):
    if expr is sympy.true:
        return True
    if expr is sympy.false:
        return False
    if expr.is_Integer:
        return int(expr)
    if expr.is_Number:
        return float(expr)
    return None


class ShapeEnv:
    """Symbols, their values and ranges, the guards taken on them and the facts asserted about them."""

    def __init__(
        self,
        *,
        allow_scalar_outputs: bool = True,
        allow_dynamic_output_shape_ops: bool = False,
        assume_static_by_default: bool = False,
        specialize_zero_one: bool = True,
        duck_shape: bool = True,
        co_fields: dict | None = None,
    ) -> None:
        self.allow_scalar_outputs = allow_scalar_outputs
        self.allow_dynamic_output_shape_ops = allow_dynamic_output_shape_ops
        self.assume_static_by_default = assume_static_by_default
        self.specialize_zero_one = specialize_zero_one
        self.duck_shape = duck_shape
        self.co_fields = co_fields or {}
        self.guards: list[ShapeGuard] = []
        self.var_to_val: dict[sympy.Symbol, sympy.Integer] = {}
        self.var_to_range: dict[sympy.Symbol, ValueRanges] = {}
        self.var_to_sources: dict[sympy.Symbol, list[str]] = {}
        self.val_to_var: dict[int, sympy.Symbol] = {}
        self.replacements: dict[sympy.Symbol, sympy.Expr] = {}
        self.deferred_runtime_asserts: dict[sympy.Symbol | None, list[RuntimeAssert]] = {}
        self.size_like: set[sympy.Symbol] = set()
        self.unbacked_symint_counter = 0
        self.unbacked_symfloat_counter = 0
        self._backed_counter = 0
        self._input_counter = 0
        # Conditions known to hold (guarded or asserted), and definite answers already worked out.
        self._facts: set[sympy.Basic] = set()
        self._static_cache: dict[tuple, Any] = {}

    # -- making symbols -----------------------------------------------------------------------

    def create_symbol(
        self,
        val: int,
        source: Any,
        dynamic_dim: DimDynamic = DimDynamic.DUCK,
        constraint_dim: Any = None,
        positive: bool | None = True,
        do_not_specialize_zero_one: bool = False,
        symbolic_context: Any = None,
    ) -> sympy.Expr:
        """The expression for a size (or stride, or offset) ``val`` read from ``source``."""
        if not isinstance(val, int) or isinstance(val, bool):
            raise TypeError(f"create_symbol takes an int value, got {type(val).__name__}")
        name = _source_name(source)
        if dynamic_dim is DimDynamic.STATIC:
            return sympy.Integer(val)
        if self.specialize_zero_one and not do_not_specialize_zero_one and val in (0, 1):
            return sympy.Integer(val)
        duck = self.duck_shape and dynamic_dim is DimDynamic.DUCK
        if duck and val in self.val_to_var:
            symbol = self.val_to_var[val]
            self.var_to_sources[symbol].append(name)
            return symbol
        symbol = sympy.Symbol(f"s{self._backed_counter}", positive=positive, integer=True)
        self._backed_counter += 1
        self.var_to_val[symbol] = sympy.Integer(val)
        self.var_to_sources[symbol] = [name]
        if positive:
            low = 2 if self.specialize_zero_one and not do_not_specialize_zero_one else 0
        else:
            low = -sympy.oo
        self.var_to_range[symbol] = ValueRanges(sympy.Integer(low) if low != -sympy.oo else low, sympy.oo)
        if duck:
            self.val_to_var[val] = symbol
        return symbol

    def create_symintnode(self, sym: sympy.Expr, hint: int | None = None, source: Any = None) -> int | SymInt:
        """A ``SymInt`` over ``sym`` (an int if ``sym`` is a constant)."""
        if sym.is_Integer:
            return int(sym)
        if hint is None:
            hint = self.size_hint(sym, allow_none=True)
        return SymInt(SymNode(sym, self, int, hint))

    def create_symfloatnode(self, sym: sympy.Expr, hint: float | None = None, source: Any = None) -> float | SymFloat:
        if sym.is_Number:
            return float(sym)
        return SymFloat(SymNode(sym, self, float, hint))

    def create_symboolnode(self, sym: sympy.Basic) -> bool | SymBool:
        value = _py_value(sym)
        if value is not None:
            return bool(value)
        return SymBool(SymNode(sym, self, bool, None))

    def create_unbacked_symint(self, source: Any = None) -> SymInt:
        """A size computed from data (``nonzero``'s length, ``item()``): a symbol without a value."""
        symbol = sympy.Symbol(f"u{self.unbacked_symint_counter}", integer=True)
        self.unbacked_symint_counter += 1
        self.var_to_range[symbol] = ValueRanges.unknown()
        return SymInt(SymNode(symbol, self, int, None))

    def create_unbacked_symfloat(self) -> SymFloat:
        symbol = sympy.Symbol(f"zuf{self.unbacked_symfloat_counter}", real=True)
        self.unbacked_symfloat_counter += 1
        self.var_to_range[symbol] = ValueRanges.unknown()
        return SymFloat(SymNode(symbol, self, float, None))

    def create_unbacked_symbool(self) -> SymBool:
        symint = self.create_unbacked_symint()
        symbol = symint.node.expr
        self.var_to_range[symbol] = ValueRanges(sympy.Integer(0), sympy.Integer(1))
        return SymBool(SymNode(sympy.Eq(symbol, 1), self, bool, None))

    def create_symbolic_sizes_strides_storage_offset(
        self, ex_tensor: Any, source: Any = None, *, dynamic_dims: Sequence[DimDynamic] | None = None
    ) -> tuple[tuple, tuple, int | SymInt]:
        """Sizes, strides and storage offset of ``ex_tensor`` as ints and ``SymInt``s.

        Sizes 0 and 1 stay ints; equal sizes share a symbol; a stride equal to the product of the
        sizes and strides inside it (a contiguous tensor's, or a permuted one's) is that product.
        """
        if source is None:
            source = f"__ember_input{self._input_counter}"
            self._input_counter += 1
        name = _source_name(source)
        sizes = [int(s) for s in ex_tensor.size()]
        strides = [int(s) for s in ex_tensor.stride()]
        dims = dynamic_dims or [DimDynamic.DUCK] * len(sizes)
        size_exprs = [self.create_symbol(v, f"{name}.size()[{i}]", dims[i]) for i, v in enumerate(sizes)]
        stride_exprs = self._stride_exprs(sizes, strides, size_exprs, name)
        offset_expr = self.create_symbol(int(ex_tensor.storage_offset()), f"{name}.storage_offset()")
        sym_sizes = tuple(self.create_symintnode(e, hint=v) for e, v in zip(size_exprs, sizes, strict=True))
        sym_strides = tuple(self.create_symintnode(e, hint=v) for e, v in zip(stride_exprs, strides, strict=True))
        offset = self.create_symintnode(offset_expr, hint=int(ex_tensor.storage_offset()))
        return sym_sizes, sym_strides, offset

    def _stride_exprs(self, sizes: list, strides: list, size_exprs: list, name: str) -> list:
        # Strides known as products of the sizes within them, innermost first (PyTorch's way).
        candidates: dict[int, sympy.Expr] = {1: sympy.Integer(1)}
        out: list = [None] * len(sizes)
        pending = set(range(len(sizes)))
        while pending:
            progress = False
            for d in sorted(pending, key=lambda d: strides[d]):
                if strides[d] in candidates:
                    out[d] = candidates[strides[d]]
                    candidates.setdefault(strides[d] * sizes[d], out[d] * size_exprs[d])
                    pending.discard(d)
                    progress = True
            if not progress:
                d = min(pending, key=lambda d: strides[d])
                out[d] = self.create_symbol(strides[d], f"{name}.stride()[{d}]")
                candidates.setdefault(strides[d], out[d])
        return out

    # -- what is known ------------------------------------------------------------------------

    def simplify(self, expr: sympy.Basic) -> sympy.Basic:
        """``expr`` with the replacements guards have made (``s1`` -> ``s0`` after ``s1 == s0``)."""
        if self.replacements and expr.free_symbols & self.replacements.keys():
            return expr.xreplace(self.replacements)
        return expr

    def _ranges(self, size_oblivious: bool) -> dict:
        if not size_oblivious or not self.size_like:
            return self.var_to_range
        # Size-oblivious reasoning: a size-like unbacked symbol is taken to be at least 2.
        ranges = dict(self.var_to_range)
        for s in self.size_like:
            r = ranges[s]
            ranges[s] = ValueRanges(sympy.Max(r.lower, 2), sympy.Max(r.upper, 2))
        return ranges

    def maybe_evaluate_static(self, expr: sympy.Basic, *, size_oblivious: bool = False) -> Any:
        """The value of ``expr`` if what is known decides it without a new guard, else None."""
        expr = self.simplify(sympy.sympify(expr))
        value = _py_value(expr)
        if value is not None:
            return value
        key = (expr, size_oblivious)
        if key in self._static_cache:
            return self._static_cache[key]
        if expr in self._facts:
            value = True
        elif _negate(expr) in self._facts:
            value = False
        else:
            ranges = self._ranges(size_oblivious)
            # Decided by the ranges of the symbols it mentions alone: cached across environments, as
            # every fresh environment gives its sizes the same ranges and meta kernels ask the same things.
            known = tuple(sorted(((s, ranges.get(s)) for s in expr.free_symbols), key=str))
            value = _decide_by_ranges(expr, known)
        if value is not None:
            self._static_cache[key] = value
        return value

    _maybe_evaluate_static = maybe_evaluate_static

    def size_hint(self, expr: sympy.Basic, *, allow_none: bool = False) -> Any:
        """The value of ``expr`` at the symbols' values; None (or an error) if an unbacked one takes part."""
        expr = sympy.sympify(expr)
        value = _py_value(expr)
        if value is not None:
            return value
        missing = [s for s in expr.free_symbols if s not in self.var_to_val]
        if missing:
            if allow_none:
                return None
            raise self._data_dependent(expr)
        return _py_value(expr.xreplace(self.var_to_val))

    def bound_sympy(self, expr: sympy.Expr, size_oblivious: bool = False) -> ValueRanges:
        return bound(self.simplify(expr), self._ranges(size_oblivious))

    def _data_dependent(self, expr: sympy.Basic) -> GuardOnDataDependentSymNode:
        size_like = sorted(str(s) for s in self.size_like & expr.free_symbols)
        return GuardOnDataDependentSymNode(
            expr,
            f"Could not guard on data-dependent expression {expr} (unhinted: {expr}).  "
            f"(Size-like symbols: {', '.join(size_like) or 'none'})\n\n"
            "consider using data-dependent friendly APIs such as guard_or_false, guard_or_true and "
            "statically_known_true, or tell the compiler a fact with ember._check()",
        )

    # -- guards -------------------------------------------------------------------------------

    def evaluate_expr(
        self, orig_expr: sympy.Basic, hint: Any = None, fx_node: Any = None, size_oblivious: bool = False
    ) -> Any:
        """The Python value of ``orig_expr``: decided from what is known, else its hint, guarded."""
        value = _py_value(orig_expr)
        if value is not None:
            return value
        static = self.maybe_evaluate_static(orig_expr, size_oblivious=size_oblivious)
        if static is not None:
            return static
        expr = self.simplify(orig_expr)
        if hint is None:
            hint = self.size_hint(expr)  # raises GuardOnDataDependentSymNode for an unbacked one
        self._record_guard(expr, hint, size_oblivious)
        return hint

    def _record_guard(self, expr: sympy.Basic, value: Any, size_oblivious: bool = False) -> None:
        if isinstance(value, bool):
            fact = expr if value else _negate(expr)
        else:
            fact = sympy.Eq(expr, value)
        if fact is sympy.true:
            return
        self.guards.append(ShapeGuard(fact, size_oblivious))
        self._learn(fact)

    def _learn(self, fact: sympy.Basic) -> None:
        """Add a fact: remember it, narrow value ranges, and turn equalities into replacements."""
        if isinstance(fact, sympy.And):
            for part in fact.args:
                self._learn(part)
            return
        self._facts.add(fact)
        if not isinstance(fact, sympy.core.relational.Relational):
            return
        lhs, rhs = fact.lhs, fact.rhs
        if isinstance(fact, sympy.Eq):
            self._learn_equality(lhs, rhs)
            return
        # ``s op c`` or ``c op s``: narrow the symbol's range.
        if lhs.is_Symbol and rhs.is_Integer:
            self._narrow(lhs, type(fact), int(rhs))
        elif rhs.is_Symbol and lhs.is_Integer:
            self._narrow(rhs, type(fact.reversed), int(lhs))

    def _narrow(self, symbol: sympy.Symbol, relation: type, c: int) -> None:
        r = self.var_to_range.get(symbol, ValueRanges.unknown())
        lower, upper = r.lower, r.upper
        if relation is sympy.StrictGreaterThan:
            lower = sympy.Max(lower, c + 1)
        elif relation is sympy.GreaterThan:
            lower = sympy.Max(lower, c)
        elif relation is sympy.StrictLessThan:
            upper = sympy.Min(upper, c - 1)
        elif relation is sympy.LessThan:
            upper = sympy.Min(upper, c)
        self.var_to_range[symbol] = ValueRanges(lower, upper)

    def _learn_equality(self, lhs: sympy.Expr, rhs: sympy.Expr) -> None:
        free = (lhs - rhs).free_symbols
        if lhs.is_Symbol and rhs.is_Symbol:
            # The later symbol becomes the earlier one, as in PyTorch.
            keep, drop = sorted((lhs, rhs), key=_symbol_order)
            self._replace(drop, keep)
        elif len(free) == 1:
            # ``a*s + b == 0`` with an integer solution: the symbol is that value.
            (symbol,) = free
            diff = sympy.expand(lhs - rhs)
            coeff = diff.coeff(symbol, 1)
            rest = diff - coeff * symbol
            if coeff.is_Number and coeff != 0 and not rest.free_symbols:
                solution = -rest / coeff
                if solution.is_Integer:
                    self._replace(symbol, solution)

    def _replace(self, symbol: sympy.Symbol, value: sympy.Expr) -> None:
        if symbol in self.replacements:
            return
        self.replacements[symbol] = value
        # Replacements made before may mention the symbol replaced now.
        for k, v in list(self.replacements.items()):
            self.replacements[k] = v.xreplace({symbol: value})
        if value.is_Integer:
            self.var_to_range[symbol] = ValueRanges.point(value)

    def expect_true(self, expr: sympy.Basic, hint: Any = None) -> bool:
        """Assert ``expr``: a guard if it has a value, else a runtime assertion (kept, and learnt)."""
        static = self.maybe_evaluate_static(expr)
        if static is not None:
            return bool(static)
        expr = self.simplify(expr)
        if hint is None:
            hint = self.size_hint(expr, allow_none=True)
        if hint is not None:
            self._record_guard(expr, bool(hint))
            return bool(hint)
        unbacked = sorted((s for s in expr.free_symbols if s not in self.var_to_val), key=_symbol_order)
        key = unbacked[-1] if unbacked else None
        self.deferred_runtime_asserts.setdefault(key, []).append(RuntimeAssert(expr))
        self._learn(expr)
        return True

    def defer_runtime_assert(self, orig_expr: sympy.Basic, msg: str = "", fx_node: Any = None) -> bool:
        return self.expect_true(orig_expr)

    def advise_is_size(self, expr: sympy.Basic) -> None:
        """Mark the unbacked symbol ``expr`` as a size: at least 0, and taken as >= 2 where size-oblivious."""
        if expr.is_Symbol and expr not in self.var_to_val:
            self.size_like.add(expr)
            r = self.var_to_range.get(expr, ValueRanges.unknown())
            self.var_to_range[expr] = ValueRanges(sympy.Max(r.lower, 0), r.upper)
            self._static_cache.clear()

    def constrain_range(self, symbol: sympy.Symbol, *, min: int | None, max: int | None) -> None:
        r = self.var_to_range.get(symbol, ValueRanges.unknown())
        lower = r.lower if min is None else sympy.Max(r.lower, min)
        upper = r.upper if max is None else sympy.Min(r.upper, max)
        self.var_to_range[symbol] = ValueRanges(lower, upper)

    # -- guards as code -----------------------------------------------------------------------

    def format_guards(self, verbose: bool = False) -> str:
        return "\n".join(f" - {g.expr}" for g in self.guards)

    def produce_guards(
        self, placeholders: Sequence[Any], sources: Sequence[Any], source_ref: Any = None, **kwargs: Any
    ) -> list[str]:
        """The guards as Python expressions over ``sources`` (one per placeholder: a tensor or a number).

        Every input size is bound to its source; a size that another source holds the same symbol
        of, or that is a constant, gives an equality; then come the recorded guards, and each size
        symbol's range.
        """
        if len(placeholders) != len(sources):
            raise ValueError(f"produce_guards: {len(placeholders)} placeholders but {len(sources)} sources")
        ref = source_ref or (lambda s: s)
        bound_to: dict[sympy.Symbol, str] = {}
        out: list[str] = []
        later: list[tuple[str, sympy.Expr]] = []

        def track(value: Any, where: str) -> None:
            if isinstance(value, SymInt | SymFloat | SymBool):
                expr = self.simplify(value.node.expr)
            else:
                expr = sympy.sympify(value)
            if expr.is_Number:
                out.append(f"{where} == {_py_value(expr)}")
            elif expr.is_Symbol and expr not in bound_to:
                bound_to[expr] = where
            else:
                later.append((where, expr))

        for value, source in zip(placeholders, sources, strict=True):
            where = ref(_source_name(source))
            if hasattr(value, "stride") and hasattr(value, "storage_offset"):
                for i, size in enumerate(value.size()):
                    track(size, f"{where}.size()[{i}]")
                for i, stride in enumerate(value.stride()):
                    track(stride, f"{where}.stride()[{i}]")
                track(value.storage_offset(), f"{where}.storage_offset()")
            elif value is not None:
                track(value, where)
        printer = PythonPrinter(bound_to)
        for where, expr in later:
            if expr.free_symbols <= bound_to.keys():
                out.append(f"{where} == {printer.doprint(expr)}")
        seen = set()
        for guard in self.guards:
            expr = self.simplify(guard.expr)
            if expr is sympy.true or expr in seen or not expr.free_symbols <= bound_to.keys():
                continue
            seen.add(expr)
            if _bounds_one_symbol(expr) and expr.free_symbols <= self.var_to_range.keys():
                continue  # the symbol's range, printed below, states it
            out.append(printer.doprint(expr))
        for symbol, where in bound_to.items():
            r = self.var_to_range.get(symbol)
            if r is None:
                continue
            lower = f"{_py_value(r.lower)} <= " if r.lower.is_finite else ""
            upper = f" <= {_py_value(r.upper)}" if r.upper.is_finite else ""
            if lower or upper:
                out.append(f"{lower}{where}{upper}")
        return out

    def evaluate_guards_for_args(self, placeholders: Sequence[Any], args: Sequence[Any]) -> bool:
        """Whether ``args`` satisfy the guards on ``placeholders`` (named ``t0, t1, ...``)."""
        names = [f"t{i}" for i in range(len(args))]
        code = self.produce_guards(placeholders, names)
        scope = dict(zip(names, args, strict=True))
        return all(eval(line, {}, scope) for line in code)

    def __repr__(self) -> str:
        return f"ShapeEnv(symbols={list(self.var_to_val)}, guards={len(self.guards)})"


def _bounds_one_symbol(expr: sympy.Basic) -> bool:
    """Whether ``expr`` compares one symbol with a number (``s0 > 2``): a bound its range holds."""
    if not isinstance(expr, sympy.core.relational.Relational) or isinstance(expr, sympy.Ne):
        return False
    sides = (expr.lhs, expr.rhs)
    return any(a.is_Symbol for a in sides) and any(a.is_Number for a in sides)


@lru_cache(maxsize=16384)
def _decide_by_ranges(expr: sympy.Basic, ranges: tuple) -> Any:
    known = dict(ranges)
    if expr.is_Boolean or isinstance(expr, sympy.core.relational.Relational):
        return decide(expr, known)
    r = bound(expr, known)
    return _py_value(r.lower) if r.is_point() else None


def _symbol_order(symbol: sympy.Symbol) -> tuple:
    name = symbol.name
    digits = name.lstrip("abcdefghijklmnopqrstuvwxyz_")
    return (name[: len(name) - len(digits)], int(digits) if digits.isdigit() else math.inf)


# -- helpers over plain and symbolic values -------------------------------------------------------


def is_concrete_int(a: Any) -> bool:
    """Whether ``a`` is an int, or a ``SymInt`` whose expression is a constant."""
    if isinstance(a, int):
        return True
    return isinstance(a, SymInt) and a.node.expr.is_Integer


def is_concrete_bool(a: Any) -> bool:
    if isinstance(a, bool):
        return True
    return isinstance(a, SymBool) and a.node.expr in (sympy.true, sympy.false)


def free_symbols(value: Any) -> set[sympy.Symbol]:
    """The symbols ``value`` (a number, a sympy expression, a tensor, or a sequence of them) mentions."""
    if isinstance(value, SymInt | SymFloat | SymBool):
        return set(value.node.expr.free_symbols)
    if isinstance(value, sympy.Basic):
        return set(value.free_symbols)
    if isinstance(value, list | tuple):
        out: set = set()
        for v in value:
            out |= free_symbols(v)
        return out
    if hasattr(value, "stride") and hasattr(value, "storage_offset"):
        return free_symbols((*value.size(), *value.stride(), value.storage_offset()))
    return set()


def has_free_symbols(value: Any) -> bool:
    return bool(free_symbols(value))


def hint_int(a: Any, fallback: int | None = None) -> int:
    """The value ``a`` has for the sizes at hand, without a guard; ``fallback`` for an unbacked one."""
    if isinstance(a, SymInt):
        if a.node.hint is not None:
            return a.node.hint
        hint = a.node.shape_env.size_hint(a.node.expr, allow_none=True)
        if hint is None:
            if fallback is None:
                raise a.node.shape_env._data_dependent(a.node.expr)
            return fallback
        return hint
    return int(a)


def guard_bool(a: Any) -> bool:
    return bool(a)


def guard_int(a: Any) -> int:
    return int(a)


def guard_float(a: Any) -> float:
    return float(a)


def statically_known_true(x: Any) -> bool:
    """True only if ``x`` is true for every value of its symbols, as far as is known; never guards."""
    if isinstance(x, SymBool):
        return x.node.shape_env.maybe_evaluate_static(x.node.expr) is True
    return bool(x)


def definitely_true(a: Any) -> bool:
    """True only if ``a`` is known true; guards where there is a hint (PyTorch's rule)."""
    if isinstance(a, SymBool):
        if a.node.hint is not None or a.node.shape_env.size_hint(a.node.expr, allow_none=True) is not None:
            return bool(a)
        return statically_known_true(a)
    return bool(a)


def definitely_false(a: Any) -> bool:
    if isinstance(a, SymBool):
        if a.node.hint is not None or a.node.shape_env.size_hint(a.node.expr, allow_none=True) is not None:
            return not bool(a)
        return a.node.shape_env.maybe_evaluate_static(a.node.expr) is False
    return not bool(a)


def guard_size_oblivious(expr: Any) -> bool:
    """``bool(expr)`` deciding as if every size-like unbacked symbol were at least 2."""
    if isinstance(expr, SymBool):
        return expr.node.guard_size_oblivious()
    return bool(expr)


def guard_or_false(a: Any) -> bool:
    """``bool(a)`` where known without a data-dependent guard, else False."""
    try:
        return bool(a)
    except GuardOnDataDependentSymNode:
        return False


def guard_or_true(a: Any) -> bool:
    try:
        return bool(a)
    except GuardOnDataDependentSymNode:
        return True
