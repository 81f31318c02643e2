"""Values the loops of one row share: computed once into a row buffer, read back by the later loops.

A fused group runs, for each row, the loops of its nodes one after the other (``codegen_cpp``), and
each node's body inlines the pointwise values it reads. When a reduction and the loop after it read
the same costly value, it is computed twice per element: softmax's ``exp(x - max)`` in the sum's loop
and again in the loop that divides by the sum; a user's ``e = (x - m).exp(); e / e.sum(-1, True)``
likewise. Here the first loop that computes such a value also stores it into a small buffer of one
row's length (on the stack of the piece of rows, so it stays in L1 or L2), and the later loops of the
row load it from there instead of computing it again.

Values are matched by a structural key, found by running each node's body under ``RowValues``: the
op and its operands' keys, a load by its buffer and index with the row dims written in terms of the
row number and the inner loop indexes renamed by position (a reduction's ``r0`` and the next loop's
``x1`` walk the same elements of the row). A value is shared when it depends on the inner loop, holds
an op that costs more than a load (a transcendental, a division, a square root, a power, a random
draw), is a float or double, and what it loads is not written by a node in between. Only the largest
such values are stored (``exp(x - max)``, not also ``x - max``).

A shared value is the same expression on the same inputs, so the bits are those of the recomputation,
on any number of threads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy

from ember.inductor import config
from ember.inductor.cpp_ops import CppOverrides, cexpr, compute_ctype
from ember.inductor.ir import index_symbols
from ember.inductor.virtualized import BINARY, UNARY, is_indirect, set_ops_handler

# ops whose result costs more to compute again than to load from a row buffer
COSTLY = frozenset(
    {
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
        "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "erfc", "sigmoid",
        "reciprocal", "truediv", "floordiv", "remainder", "pow", "atan2", "rand", "randn",
    }
)  # fmt: skip
_FLOATS = ("float", "double")
_NOT_FLOAT_UNARY = frozenset({"logical_not", "bitwise_not", "isnan", "isinf"})
_ARITHMETIC = frozenset({"add", "sub", "mul", "truediv", "floordiv", "remainder", "pow", "maximum", "minimum"})
_ROW = sympy.Symbol("xr", integer=True, nonnegative=True)
_AUTO = re.compile(r"^auto (\w+) = ")
_NAMES = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Value:
    """What ``RowValues`` knows of one C++ variable (or literal) of a body."""

    key: str | None  # structural key; None: not comparable (read through an indirect index, an accumulator)
    ctype: str | None  # its C++ type when known
    inner: bool  # depends on the node's inner loop indexes
    costly: bool  # holds an op of ``COSTLY``
    reads: frozenset[str]  # the buffers it loads
    parts: frozenset[str]  # the keys of the values it is made of, at any depth


@dataclass
class RowPlan:
    """Row buffers of one group: declared at the start of each piece of rows; which node stores which
    value (by key) into which buffer, which node loads it back."""

    decls: list[str] = field(default_factory=list)
    stores: dict[int, dict[str, str]] = field(default_factory=dict)
    loads: dict[int, dict[str, str]] = field(default_factory=dict)


class RowValues(CppOverrides):
    """``CppOverrides`` that also keys each value (``Value``); with a plan, it stores the planned values
    into their row buffers (``stores``: key -> buffer) or loads them from there (``loads``)."""

    def __init__(
        self,
        arg_of: dict[str, str],
        dtype_of: dict[str, Any],
        ridx: str,
        prefix: str,
        canon: dict[sympy.Symbol, sympy.Expr],
        linear: str,
        stores: dict[str, str] | None = None,
        loads: dict[str, str] | None = None,
    ) -> None:
        super().__init__(arg_of, dtype_of, ridx, prefix)
        self.canon = canon  # loop index -> its canonical form (row dims from ``xr``, inner dims ``i0``, ``i1``...)
        self.inner_syms = frozenset(s for s, c in canon.items() if c.free_symbols - {_ROW})
        self.linear = linear  # the position in the row buffer, from this node's loop indexes (C++)
        self.stores, self.loads = stores or {}, loads or {}
        self.values: dict[str, Value] = {}
        self.loop_values: dict[str, Value] = {}  # key -> value, for those computed in the loop (not after it)
        self._stored: set[str] = set()

    def drop_unused(self) -> None:
        """Drop the definitions nothing reads: what a value loaded from a row buffer was computed from."""
        dead: set[str] = set()
        while True:
            used: set[str] = set()
            for line in self.body + self.post:
                m = _AUTO.match(line)
                if m is None or m.group(1) not in dead:
                    used.update(_NAMES.findall(line[m.end() :] if m else line))
            more = {m.group(1) for line in self.body + self.post if (m := _AUTO.match(line)) and m.group(1) not in used}
            if more <= dead:
                break
            dead |= more
        self.body = [line for line in self.body if (m := _AUTO.match(line)) is None or m.group(1) not in dead]
        self.post = [line for line in self.post if (m := _AUTO.match(line)) is None or m.group(1) not in dead]

    def _index_key(self, kind: str, index: sympy.Expr) -> tuple[str | None, bool]:
        if is_indirect(index):
            return None, True
        inner = bool(sympy.sympify(index).free_symbols & self.inner_syms)
        return f"{kind}[{sympy.expand(sympy.sympify(index).xreplace(self.canon))}]", inner

    def _note(self, name: str, value: Value) -> str:
        self.values[name] = value
        if value.key is not None and self.reduction_info is None:
            self.loop_values.setdefault(value.key, value)
        return name

    def _define(self, op: str, args: tuple, ctype: str | None, emit: Callable[[], str]) -> str:
        infos = [self.values.get(a) if isinstance(a, str) else None for a in args]
        known = all(i is not None and i.key is not None for i in infos)
        key = f"{op}({', '.join(i.key for i in infos)})" if known else None
        value = Value(
            key,
            ctype,
            any(i.inner for i in infos if i is not None),
            op in COSTLY or any(i.costly for i in infos if i is not None),
            frozenset().union(*(i.reads for i in infos if i is not None)),
            frozenset().union(*(i.parts | {i.key} for i in infos if i is not None and i.key is not None)),
        )
        if key is not None and key in self.loads and self.reduction_info is None:
            name = self._var(f"{self.loads[key]}[{self.linear}]")
        else:
            name = emit()
            if key is not None and key in self.stores and key not in self._stored and self.reduction_info is None:
                self.body.append(f"{self.stores[key]}[{self.linear}] = {name};")
                self._stored.add(key)
        return self._note(name, value)

    def _ctype(self, x: Any) -> str | None:
        info = self.values.get(x) if isinstance(x, str) else None
        return info.ctype if info is not None else None

    def load(self, name: str, index: sympy.Expr) -> str:
        var = super().load(name, index)
        key, inner = self._index_key(f"load {name}", index)
        return self._note(
            var, Value(key, compute_ctype(self.dtype_of[name]), inner, False, frozenset({name}), frozenset())
        )

    def index_expr(self, expr: sympy.Expr, dtype: Any) -> str:
        var = super().index_expr(expr, dtype)
        key, inner = self._index_key(f"index {dtype}", expr)
        return self._note(var, Value(key, compute_ctype(dtype), inner, False, frozenset(), frozenset()))

    def constant(self, value: float | int | bool, dtype: Any) -> str:
        text = super().constant(value, dtype)
        self.values[text] = Value(f"{value!r}:{dtype}", compute_ctype(dtype), False, False, frozenset(), frozenset())
        return text

    def to_dtype(self, x: str, dtype: Any) -> str:
        return self._define(f"to {dtype}", (x,), compute_ctype(dtype), lambda: CppOverrides.to_dtype(self, x, dtype))

    def where(self, cond: str, a: str, b: str) -> str:
        return self._define("where", (cond, a, b), self._ctype(a), lambda: CppOverrides.where(self, cond, a, b))

    def rand(self, seed: str, offset: str) -> str:
        return self._define("rand", (seed, offset), "float", lambda: CppOverrides.rand(self, seed, offset))

    def randn(self, seed: str, offset: str) -> str:
        return self._define("randn", (seed, offset), "float", lambda: CppOverrides.randn(self, seed, offset))


def _unary(name: str):
    base = getattr(CppOverrides, name)

    def method(self: RowValues, x: str) -> str:
        t = self._ctype(x)
        ctype = t if t in _FLOATS and name not in _NOT_FLOAT_UNARY else None
        return self._define(name, (x,), ctype, lambda: base(self, x))

    method.__name__ = name
    return method


def _binary(name: str):
    base = getattr(CppOverrides, name)

    def method(self: RowValues, a: str, b: str) -> str:
        types = (self._ctype(a), self._ctype(b))
        ctype = None
        if name == "atan2":  # std::atan2 of a float and an integer is a double
            ctype = types[0] if types[0] == types[1] and types[0] in _FLOATS else None
        elif name in _ARITHMETIC and None not in types:  # C++'s usual arithmetic conversions
            ctype = "double" if "double" in types else "float" if "float" in types else None
        return self._define(name, (a, b), ctype, lambda: base(self, a, b))

    method.__name__ = name
    return method


for _name in UNARY:
    setattr(RowValues, _name, _unary(_name))
for _name in BINARY:
    setattr(RowValues, _name, _binary(_name))


def inner_loops(node: Any) -> list[tuple[str, Any]]:
    """The loops a node runs inside a row: its reduction's, else its dims after the row dims."""
    buf = node.buffer
    if buf.is_reduction:
        return [(f"r{d}", n) for d, n in enumerate(buf.reduction_size)]
    return [(f"x{d}", buf.size[d]) for d in range(node.split, len(buf.size))]


def _canon(node: Any) -> tuple[dict[sympy.Symbol, sympy.Expr], tuple[int, ...], str]:
    """A node's loop indexes in canonical form, its inner loop sizes (size-1 dims left out) and its
    position in a row buffer (C++), from its own indexes."""
    buf = node.buffer
    size, split = buf.size, node.split
    xs = index_symbols("x", len(size))
    canon: dict[sympy.Symbol, sympy.Expr] = {}
    for d in range(split):  # as ``codegen_cpp._node_code`` defines the row dims from the row number
        stride = math.prod(size[d + 1 : split])
        e = _ROW if stride == 1 else sympy.floor(_ROW / stride)
        canon[xs[d]] = sympy.Integer(0) if size[d] == 1 else (sympy.Mod(e, size[d]) if d > 0 else e)
    loops = [(v, int(n) if isinstance(n, sympy.Integer) else n) for v, n in inner_loops(node)]
    kept = [(sympy.Symbol(v, integer=True, nonnegative=True), n) for v, n in loops if n != 1]
    for v, n in loops:
        if n == 1:
            canon[sympy.Symbol(v, integer=True, nonnegative=True)] = sympy.Integer(0)
    for j, (sym, _) in enumerate(kept):
        canon[sym] = sympy.Symbol(f"i{j}", integer=True, nonnegative=True)
    sizes = tuple(n for _, n in kept)
    linear = sum((sym * math.prod(sizes[j + 1 :]) for j, (sym, _) in enumerate(kept)), sympy.Integer(0))
    return canon, sizes, cexpr(linear)


def row_handler(
    node: Any, k: int, arg_of: dict, dtype_of: dict, ridx: str, prefix: str, plan: RowPlan | None
) -> CppOverrides:
    """The handler ``codegen_cpp`` writes node ``k`` of a group with: plain, or following ``plan``."""
    if plan is None or (k not in plan.stores and k not in plan.loads):
        return CppOverrides(arg_of, dtype_of, ridx, prefix)
    canon, _, linear = _canon(node)
    return RowValues(arg_of, dtype_of, ridx, prefix, canon, linear, plan.stores.get(k), plan.loads.get(k))


def plan_rows(nodes: list, arg_of: dict, dtype_of: dict) -> RowPlan | None:
    """Which values the nodes of a group (each running its own loops per row, in order) share through
    row buffers; None when none is worth it."""
    infos: list[tuple[tuple[int, ...], dict[str, Value]] | None] = []
    for k, node in enumerate(nodes):
        canon, sizes, linear = _canon(node)
        if not sizes or not all(type(n) is int for n in sizes):
            infos.append(None)  # no inner loop, or a symbolic one: nothing to share, no bound on its buffer
            continue
        handler = RowValues(arg_of, dtype_of, f"n{k}_ridx", f"n{k}_", canon, linear)
        index = index_symbols("x", len(node.buffer.size))
        rindex = index_symbols("r", len(node.buffer.reduction_size))
        with set_ops_handler(handler):
            node.buffer.store_body(list(index), list(rindex))
        infos.append((sizes, handler.loop_values))
    plan, buffers = RowPlan(), {}
    budget = config.cpp.max_row_buffer_bytes
    for b, info in enumerate(infos):
        if info is None:
            continue
        sizes, values = info
        found = []
        for key, value in values.items():
            if not (value.inner and value.costly and value.ctype in _FLOATS):
                continue
            for p in range(b):  # the first node before that computes it, with nothing it loads written since
                if infos[p] is None or infos[p][0] != sizes or key not in infos[p][1]:
                    continue
                if all(nodes[j].writes not in value.reads for j in range(p, b)):
                    found.append((key, p))
                    break
        for key, p in found:
            if any(key in values[other].parts for other, _ in found if other != key):
                continue  # inside a larger shared value
            if (key, p) not in buffers:
                ctype = values[key].ctype
                nbytes = math.prod(sizes) * (8 if ctype == "double" else 4)
                if nbytes > budget:
                    continue
                budget -= nbytes
                name = f"ember_row{len(buffers)}"
                buffers[key, p] = name
                plan.decls.append(f"alignas(64) {ctype} {name}[{math.prod(sizes)}];")
                plan.stores.setdefault(p, {})[key] = name
            plan.loads.setdefault(b, {})[key] = buffers[key, p]
    return plan if buffers else None


__all__ = ["COSTLY", "RowPlan", "RowValues", "Value", "inner_loops", "plan_rows", "row_handler"]
