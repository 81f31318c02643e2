"""The virtual ``ops`` handler: the one interface every loop body is written against.

A buffer's body is a closure ``inner_fn(index)`` that calls ``ops.load``, ``ops.add``, ... on
whatever handler is current. Running the same closure under another handler gives C++ source
(``codegen_cpp.CppOverrides``), the buffers it reads (``ReadsHandler``), an op count
(``CountHandler``) or a printable trace (``StrHandler``). ``OpsHandler`` is the typed protocol;
``OP_NAMES`` lists its methods and a test holds every handler to all of them.

Values flowing through a handler are opaque to the body (a C++ expression string, a count...).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Iterator
from typing import Any, Protocol

import sympy

UNARY = (
    "abs",
    "neg",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "sigmoid",
    "reciprocal",
    "floor",
    "ceil",
    "trunc",
    "round",
    "sign",
    "logical_not",
    "bitwise_not",
    "isnan",
    "isinf",
    "relu",
)
BINARY = (
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "remainder",
    "pow",
    "maximum",
    "minimum",
    "atan2",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
)
REDUCTION_TYPES = ("sum", "prod", "max", "min", "argmax", "argmin", "welford", "any")


class OpsHandler(Protocol):
    """What a loop body may call. ``dtype`` arguments are ember dtypes; ``index`` a sympy expression."""

    def load(self, name: str, index: sympy.Expr) -> Any: ...
    def store(self, name: str, index: sympy.Expr, value: Any) -> None: ...
    def constant(self, value: float | int | bool, dtype: Any) -> Any: ...
    def index_expr(self, expr: sympy.Expr, dtype: Any) -> Any: ...
    def to_dtype(self, x: Any, dtype: Any) -> Any: ...
    def where(self, cond: Any, a: Any, b: Any) -> Any: ...
    def reduction(self, dtype: Any, reduction_type: str, value: Any) -> Any: ...
    def store_reduction(self, name: str, index: sympy.Expr, value: Any) -> None: ...
    def getitem(self, value: Any, i: int) -> Any: ...
    # Philox random numbers of the int64 values ``seed`` and ``offset`` (eager's stream)
    def rand(self, seed: Any, offset: Any) -> Any: ...
    def randn(self, seed: Any, offset: Any) -> Any: ...
    def randint64(self, seed: Any, offset: Any, low: Any, high: Any) -> Any: ...
    # an integer value as an index into a dimension of ``size``: a new symbol that later loads may use in
    # their index expressions; ``wrap``: a negative value counts from the end (advanced indexing; not
    # embedding, index_select, gather); ``check`` bounds-checks it at run time (an out-of-range value
    # raises, ``indirect.py``); ``error`` says which error
    def indirect_indexing(
        self, value: Any, size: Any, check: bool = True, wrap: bool = True, error: Any = None
    ) -> sympy.Symbol: ...

    # pointwise math, one method per op (listed in UNARY and BINARY)
    def abs(self, x: Any) -> Any: ...
    def neg(self, x: Any) -> Any: ...
    def exp(self, x: Any) -> Any: ...
    def exp2(self, x: Any) -> Any: ...
    def expm1(self, x: Any) -> Any: ...
    def log(self, x: Any) -> Any: ...
    def log2(self, x: Any) -> Any: ...
    def log10(self, x: Any) -> Any: ...
    def log1p(self, x: Any) -> Any: ...
    def sqrt(self, x: Any) -> Any: ...
    def rsqrt(self, x: Any) -> Any: ...
    def sin(self, x: Any) -> Any: ...
    def cos(self, x: Any) -> Any: ...
    def tan(self, x: Any) -> Any: ...
    def tanh(self, x: Any) -> Any: ...
    def sinh(self, x: Any) -> Any: ...
    def cosh(self, x: Any) -> Any: ...
    def asin(self, x: Any) -> Any: ...
    def acos(self, x: Any) -> Any: ...
    def atan(self, x: Any) -> Any: ...
    def asinh(self, x: Any) -> Any: ...
    def acosh(self, x: Any) -> Any: ...
    def atanh(self, x: Any) -> Any: ...
    def erf(self, x: Any) -> Any: ...
    def erfc(self, x: Any) -> Any: ...
    def sigmoid(self, x: Any) -> Any: ...
    def reciprocal(self, x: Any) -> Any: ...
    def floor(self, x: Any) -> Any: ...
    def ceil(self, x: Any) -> Any: ...
    def trunc(self, x: Any) -> Any: ...
    def round(self, x: Any) -> Any: ...
    def sign(self, x: Any) -> Any: ...
    def logical_not(self, x: Any) -> Any: ...
    def bitwise_not(self, x: Any) -> Any: ...
    def isnan(self, x: Any) -> Any: ...
    def isinf(self, x: Any) -> Any: ...
    def relu(self, x: Any) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...
    def sub(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def truediv(self, a: Any, b: Any) -> Any: ...
    def floordiv(self, a: Any, b: Any) -> Any: ...
    def remainder(self, a: Any, b: Any) -> Any: ...
    def pow(self, a: Any, b: Any) -> Any: ...
    def maximum(self, a: Any, b: Any) -> Any: ...
    def minimum(self, a: Any, b: Any) -> Any: ...
    def atan2(self, a: Any, b: Any) -> Any: ...
    def eq(self, a: Any, b: Any) -> Any: ...
    def ne(self, a: Any, b: Any) -> Any: ...
    def lt(self, a: Any, b: Any) -> Any: ...
    def le(self, a: Any, b: Any) -> Any: ...
    def gt(self, a: Any, b: Any) -> Any: ...
    def ge(self, a: Any, b: Any) -> Any: ...
    def logical_and(self, a: Any, b: Any) -> Any: ...
    def logical_or(self, a: Any, b: Any) -> Any: ...
    def logical_xor(self, a: Any, b: Any) -> Any: ...
    def bitwise_and(self, a: Any, b: Any) -> Any: ...
    def bitwise_or(self, a: Any, b: Any) -> Any: ...
    def bitwise_xor(self, a: Any, b: Any) -> Any: ...


OP_NAMES: tuple[str, ...] = tuple(
    name for name, _ in inspect.getmembers(OpsHandler, inspect.isfunction) if not name.startswith("_")
)


INDIRECT_PREFIX = "ind_"


def add_template_ops(cls: type, templates: dict[str, str]) -> None:
    """Give a source-writing handler ``cls`` one method per op of ``templates`` (op name -> a format
    string of its operands, ``{0}``, ``{1}``): each writes the formatted expression through
    ``self._var`` and returns the variable it sets."""
    for name, template in templates.items():

        def method(self: Any, *args: Any, _template: str = template) -> Any:
            return self._var(_template.format(*args))

        method.__name__ = name
        setattr(cls, name, method)


def indirect_symbol(name: str) -> sympy.Symbol:
    """The index symbol an indirect load reads through: an integer in ``[0, size)``, whose value is known
    only when the kernel runs. Its name starts with ``INDIRECT_PREFIX`` (not a loop index, ``x``/``r``,
    nor a size, ``s``), so dependency analysis can tell it apart."""
    safe = "".join(c if c.isalnum() else "_" for c in name)
    return sympy.Symbol(INDIRECT_PREFIX + safe, integer=True, nonnegative=True)


def is_indirect(expr: Any) -> bool:
    """Whether an index expression reads through an indirect symbol (it may land anywhere in its buffer)."""
    return isinstance(expr, sympy.Basic) and any(s.name.startswith(INDIRECT_PREFIX) for s in expr.free_symbols)


class _Current(threading.local):
    handler: Any = None


_current = _Current()


@contextlib.contextmanager
def set_ops_handler(handler: Any) -> Iterator[Any]:
    """Make ``handler`` the one ``ops.*`` calls reach, for the ``with`` block."""
    previous = _current.handler
    _current.handler = handler
    try:
        yield handler
    finally:
        _current.handler = previous


class _OpsProxy:
    """``ops``: forwards each call to the current handler."""

    def __getattr__(self, name: str) -> Any:
        handler = _current.handler
        if handler is None:
            raise RuntimeError(f"ops.{name} called outside of set_ops_handler(...)")
        return getattr(handler, name)


ops: Any = _OpsProxy()


class _DefaultHandler:
    """A base that answers every pointwise op through ``_op(name, *args)``."""

    def _op(self, name: str, *args: Any) -> Any:
        raise NotImplementedError(name)


def _make_forward(name: str):
    def forward(self, *args):
        return self._op(name, *args)

    forward.__name__ = name
    return forward


for _name in UNARY + BINARY:
    setattr(_DefaultHandler, _name, _make_forward(_name))


class StrHandler(_DefaultHandler):
    """Prints a body as nested calls: useful in tests and debug output."""

    def _op(self, name: str, *args: Any) -> str:
        return f"{name}({', '.join(map(str, args))})"

    def load(self, name, index):
        return f"load({name}, {index})"

    def store(self, name, index, value):
        return f"store({name}, {index}, {value})"

    def store_reduction(self, name, index, value):
        return f"store_reduction({name}, {index}, {value})"

    def constant(self, value, dtype):
        return f"constant({value}, {dtype})"

    def index_expr(self, expr, dtype):
        return f"index_expr({expr}, {dtype})"

    def to_dtype(self, x, dtype):
        return f"to_dtype({x}, {dtype})"

    def where(self, cond, a, b):
        return f"where({cond}, {a}, {b})"

    def reduction(self, dtype, reduction_type, value):
        return f"reduction({reduction_type}, {value})"

    def getitem(self, value, i):
        return f"{value}[{i}]"

    def rand(self, seed, offset):
        return f"rand({seed}, {offset})"

    def randn(self, seed, offset):
        return f"randn({seed}, {offset})"

    def randint64(self, seed, offset, low, high):
        return f"randint64({seed}, {offset}, {low}, {high})"

    def indirect_indexing(self, value, size, check=True, wrap=True, error=None):
        return indirect_symbol(f"{value}")


class CountHandler(_DefaultHandler):
    """Counts the ops of a body (to decide when an inlined producer is too big to recompute)."""

    def __init__(self) -> None:
        self.count = 0

    def _op(self, name: str, *args: Any) -> None:
        self.count += 1

    def load(self, name, index):
        self.count += 1

    def store(self, name, index, value):
        self.count += 1

    def store_reduction(self, name, index, value):
        self.count += 1

    def constant(self, value, dtype):
        return None

    def index_expr(self, expr, dtype):
        self.count += 1

    def to_dtype(self, x, dtype):
        return None

    def where(self, cond, a, b):
        self.count += 1

    def reduction(self, dtype, reduction_type, value):
        self.count += 1

    def getitem(self, value, i):
        return None

    def rand(self, seed, offset):
        self.count += 1

    def randn(self, seed, offset):
        self.count += 1

    def randint64(self, seed, offset, low, high):
        self.count += 1

    def indirect_indexing(self, value, size, check=True, wrap=True, error=None):
        self.count += 1
        self._indirect = getattr(self, "_indirect", 0) + 1
        return indirect_symbol(str(self._indirect))


class ReadsHandler(CountHandler):
    """Collects the ``(buffer, index)`` pairs a body loads. An index through an indirect symbol
    (``is_indirect``) may be any element of its buffer: whoever reads ``reads`` treats it so."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, sympy.Expr]] = []

    def load(self, name, index):
        self.count += 1
        self.reads.append((name, index))
