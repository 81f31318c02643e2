"""Symbolic scalars: ``SymInt``, ``SymFloat`` and ``SymBool`` (PyTorch's ``torch.SymInt`` and kin).

Each is a thin shell around a ``node`` that does the work: arithmetic and comparisons build new
nodes (``node.add(other_node)``), and turning one into a Python value (``int()``, ``bool()``,
``__index__``) asks the node, which guards on its hint. The nodes live with the symbolic-shape
machinery in ``ember.fx.experimental``; the core knows only this protocol, so meta kernels can take
symbolic sizes without the core importing sympy.

Python numbers mix freely: ``s0 + 1`` wraps the ``1`` through ``node.wrap_int``. Operators follow
Python's numeric tower as PyTorch's do: an int with a float gives a ``SymFloat``, ``/`` of two ints
gives a ``SymFloat``, ``//`` and ``%`` of ints use Python's floor semantics.

``sym_int``, ``sym_float``, ``sym_max``, ``sym_min``, ``sym_not``, ``sym_ite`` work on plain values
and symbolic ones alike; ``_check`` and friends assert a condition, which on a symbolic condition
becomes a guard or a runtime assertion recorded by the node's shape environment.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

__all__ = [
    "INT_LIKE",
    "GuardOnDataDependentSymNode",
    "SymBool",
    "SymFloat",
    "SymInt",
    "_assert",
    "_check",
    "_check_index",
    "_check_is_size",
    "_check_type",
    "_check_value",
    "_check_with",
    "sym_float",
    "sym_int",
    "sym_ite",
    "sym_max",
    "sym_min",
    "sym_not",
]


def _wrap(node: Any):
    """A node as the symbolic type of its Python type."""
    if node.is_int():
        return SymInt(node)
    if node.is_float():
        return SymFloat(node)
    return SymBool(node)


def _node_of(base: Any, value: Any):
    """``value`` as a node beside ``base``, or None if it is not a number."""
    if isinstance(value, SymInt | SymFloat | SymBool):
        return value.node
    if type(value) is bool:
        return base.wrap_bool(value)
    if isinstance(value, int):
        return base.wrap_int(value)
    if isinstance(value, float):
        return base.wrap_float(value)
    return None


def _binary(name: str):
    """``self <name> other`` for SymInt: with a float operand the int side becomes a float first."""

    def forward(self, other):
        if isinstance(other, float | SymFloat):
            return getattr(sym_float(self), f"__{name}__")(other)
        node = _node_of(self.node, other)
        if node is None:
            return NotImplemented
        return _wrap(getattr(self.node, name)(node))

    def reflected(self, other):
        if isinstance(other, float | SymFloat):
            return getattr(sym_float(self), f"__r{name}__")(other)
        node = _node_of(self.node, other)
        if node is None:
            return NotImplemented
        return _wrap(getattr(node, name)(self.node))

    forward.__name__, reflected.__name__ = f"__{name}__", f"__r{name}__"
    return forward, reflected


def _float_binary(name: str):
    def forward(self, other):
        node = _node_of(self.node, sym_float(other) if isinstance(other, INT_LIKE) else other)
        if node is None:
            return NotImplemented
        return _wrap(getattr(self.node, name)(node))

    def reflected(self, other):
        node = _node_of(self.node, sym_float(other) if isinstance(other, INT_LIKE) else other)
        if node is None:
            return NotImplemented
        return _wrap(getattr(node, name)(self.node))

    forward.__name__, reflected.__name__ = f"__{name}__", f"__r{name}__"
    return forward, reflected


def _comparison(name: str):
    def compare(self, other):
        if isinstance(self, SymInt) and isinstance(other, float | SymFloat):
            return getattr(sym_float(self), f"__{name}__")(other)
        if isinstance(self, SymFloat) and isinstance(other, INT_LIKE) and not isinstance(other, bool):
            other = sym_float(other)
        node = _node_of(self.node, other)
        if node is None:
            return NotImplemented
        return SymBool(getattr(self.node, name)(node))

    compare.__name__ = f"__{name}__"
    return compare


class SymInt:
    """An int whose value may be a symbol: sizes under dynamic shapes. Prints as its expression."""

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node

    __add__, __radd__ = _binary("add")
    __sub__, __rsub__ = _binary("sub")
    __mul__, __rmul__ = _binary("mul")
    __floordiv__, __rfloordiv__ = _binary("floordiv")
    __mod__, __rmod__ = _binary("mod")
    __eq__ = _comparison("eq")
    __ne__ = _comparison("ne")
    __lt__ = _comparison("lt")
    __le__ = _comparison("le")
    __gt__ = _comparison("gt")
    __ge__ = _comparison("ge")

    def __truediv__(self, other):
        if isinstance(other, float | SymFloat):
            return sym_float(self) / other
        node = _node_of(self.node, other)
        return NotImplemented if node is None else _wrap(self.node.truediv(node))

    def __rtruediv__(self, other):
        if isinstance(other, float | SymFloat):
            return other / sym_float(self)
        node = _node_of(self.node, other)
        return NotImplemented if node is None else _wrap(node.truediv(self.node))

    def __pow__(self, other):
        if isinstance(other, float | SymFloat):
            return sym_float(self) ** other
        node = _node_of(self.node, other)
        return NotImplemented if node is None else _wrap(self.node.pow(node))

    def __rpow__(self, other):
        if isinstance(other, float | SymFloat):
            return other ** sym_float(self)
        node = _node_of(self.node, other)
        return NotImplemented if node is None else _wrap(node.pow(self.node))

    def __neg__(self) -> SymInt:
        return SymInt(self.node.neg())

    def __pos__(self) -> SymInt:
        return self

    def __abs__(self) -> SymInt:
        return SymInt(self.node.abs())

    def __round__(self, ndigits: int | None = None) -> SymInt:
        return self

    def __trunc__(self) -> SymInt:
        return self

    __floor__ = __ceil__ = __trunc__

    def __int__(self) -> int:
        return self.node.int_()

    def __index__(self) -> int:
        return self.node.int_()

    def __float__(self) -> float:
        return float(self.node.int_())

    def __bool__(self) -> bool:
        return builtins.bool(self != 0)

    def __hash__(self) -> int:
        # As in PyTorch: hashing would have to specialize the size, which is not what a dict key wants.
        raise TypeError("unhashable type: non-nested SymInt")

    def __sym_max__(self, other):
        return _wrap(self.node.sym_max(_node_of(self.node, other)))

    def __sym_min__(self, other):
        return _wrap(self.node.sym_min(_node_of(self.node, other)))

    def __sym_float__(self) -> SymFloat:
        return SymFloat(self.node.sym_float())

    def as_integer_ratio(self) -> tuple[SymInt, int]:
        return self, 1

    def conjugate(self) -> SymInt:
        return self

    def bit_length(self) -> int:
        return int(self).bit_length()

    def __str__(self) -> str:
        return self.node.str()

    def __repr__(self) -> str:
        return self.node.str()

    def _sympy_(self):
        return self.node.expr


# ``isinstance(x, INT_LIKE)``: an int or a SymInt. A tuple made once: ``int | SymInt`` in a call
# would build a union object every time, on paths eager calls take.
INT_LIKE = (int, SymInt)


class SymFloat:
    """A float whose value may be symbolic."""

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node

    __add__, __radd__ = _float_binary("add")
    __sub__, __rsub__ = _float_binary("sub")
    __mul__, __rmul__ = _float_binary("mul")
    __truediv__, __rtruediv__ = _float_binary("truediv")
    __pow__, __rpow__ = _float_binary("pow")
    __eq__ = _comparison("eq")
    __ne__ = _comparison("ne")
    __lt__ = _comparison("lt")
    __le__ = _comparison("le")
    __gt__ = _comparison("gt")
    __ge__ = _comparison("ge")

    def __floordiv__(self, other):
        return sym_float(math.floor(self / other))

    def __rfloordiv__(self, other):
        return sym_float(math.floor(other / self))

    def __neg__(self) -> SymFloat:
        return SymFloat(self.node.neg())

    def __pos__(self) -> SymFloat:
        return self

    def __abs__(self) -> SymFloat:
        return SymFloat(self.node.abs())

    def __floor__(self) -> SymInt:
        return SymInt(self.node.floor())

    def __ceil__(self) -> SymInt:
        return SymInt(self.node.ceil())

    def __trunc__(self) -> SymInt:
        return SymInt(self.node.sym_int())

    def __float__(self) -> float:
        return self.node.float_()

    def __int__(self) -> int:
        # A guard on the truncated value, not on the float itself: weaker, as PyTorch's.
        return int(self.__trunc__())

    def __bool__(self) -> bool:
        return builtins.bool(self != 0.0)

    def __hash__(self) -> int:
        return hash(builtins.float(self))

    def __sym_max__(self, other):
        return _wrap(self.node.sym_max(_node_of(self.node, sym_float(other))))

    def __sym_min__(self, other):
        return _wrap(self.node.sym_min(_node_of(self.node, sym_float(other))))

    def is_integer(self) -> bool:
        return builtins.float(self).is_integer()

    def conjugate(self) -> SymFloat:
        return self

    def __str__(self) -> str:
        return self.node.str()

    def __repr__(self) -> str:
        return self.node.str()

    def _sympy_(self):
        return self.node.expr


class SymBool:
    """A bool whose value may be symbolic: the result of comparing symbolic sizes.

    ``bool()`` of one guards on its value (through its node), which is how a meta kernel's
    ``if size == 1:`` becomes a guard on the input's size.
    """

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node

    def __bool__(self) -> bool:
        return self.node.bool_()

    def __and__(self, other):
        node = _node_of(self.node, other)
        if node is None or not node.is_bool():
            return NotImplemented
        return SymBool(self.node.and_(node))

    def __or__(self, other):
        node = _node_of(self.node, other)
        if node is None or not node.is_bool():
            return NotImplemented
        return SymBool(self.node.or_(node))

    __rand__ = __and__
    __ror__ = __or__

    def __invert__(self) -> SymBool:
        return SymBool(self.node.sym_not())

    __sym_not__ = __invert__

    def __eq__(self, other):
        node = _node_of(self.node, other)
        if node is None:
            return NotImplemented
        return SymBool(self.node.eq(node))

    def __ne__(self, other):
        node = _node_of(self.node, other)
        if node is None:
            return NotImplemented
        return SymBool(self.node.ne(node))

    def __sym_ite__(self, then_value, else_value):
        then_node = _node_of(self.node, then_value)
        else_node = _node_of(self.node, else_value)
        return _wrap(self.node.sym_ite(then_node, else_node))

    def __int__(self) -> int:
        return int(builtins.bool(self))

    def __hash__(self) -> int:
        return hash(builtins.bool(self))

    def __str__(self) -> str:
        return self.node.str()

    def __repr__(self) -> str:
        return self.node.str()

    def _sympy_(self):
        return self.node.expr


_SYMBOLIC = (SymInt, SymFloat, SymBool)


class GuardOnDataDependentSymNode(RuntimeError):
    """A Python decision on a size computed from data (an unbacked symbol) that nothing known settles.

    Raised by the shape environment (``ember.fx.experimental.symbolic_shapes`` re-exports it); it
    lives here so that the core's layout helpers can fall back to size-oblivious reasoning."""

    def __init__(self, cond: Any, message: str) -> None:
        super().__init__(message)
        self.cond = cond


def guard_size_oblivious(cond) -> bool:
    """``bool(cond)``, deciding as if every size computed from data were at least 2."""
    if isinstance(cond, SymBool):
        return cond.node.guard_size_oblivious()
    return builtins.bool(cond)


# -- functions over plain and symbolic values alike -----------------------------------------------


def sym_not(a):
    """``not a``, kept symbolic for a ``SymBool``."""
    if isinstance(a, SymBool):
        return ~a
    return not a


def sym_float(a):
    """``float(a)``, kept symbolic for a ``SymInt`` or ``SymFloat``."""
    if isinstance(a, SymFloat):
        return a
    if isinstance(a, SymInt):
        return a.__sym_float__()
    if isinstance(a, SymBool):
        return sym_float(sym_ite(a, 1, 0))
    return builtins.float(a)


def sym_int(a):
    """``int(a)`` (truncating toward zero), kept symbolic for a ``SymFloat``."""
    if isinstance(a, SymInt):
        return a
    if isinstance(a, SymFloat):
        return math.trunc(a)
    return builtins.int(a)


def sym_max(a, b):
    """``max(a, b)`` without guarding on which is larger; a float if either is one."""
    if isinstance(a, SymInt | SymFloat):
        return a.__sym_max__(b)
    if isinstance(b, SymInt | SymFloat):
        # max is symmetric; a float on either side makes the result a float, as PyTorch's does.
        result = b.__sym_max__(a)
        return sym_float(result) if isinstance(a, float) else result
    if isinstance(a, float) or isinstance(b, float):
        return builtins.float(builtins.max(a, b))
    return builtins.max(a, b)


def sym_min(a, b):
    """``min(a, b)`` without guarding on which is smaller; a float if either is one."""
    if isinstance(a, SymInt | SymFloat):
        return a.__sym_min__(b)
    if isinstance(b, SymInt | SymFloat):
        result = b.__sym_min__(a)
        return sym_float(result) if isinstance(a, float) else result
    if isinstance(a, float) or isinstance(b, float):
        return builtins.float(builtins.min(a, b))
    return builtins.min(a, b)


def sym_ite(b, t, f):
    """``t if b else f``, kept symbolic for a ``SymBool`` condition (``t`` and ``f`` of one type)."""
    if isinstance(b, SymBool):
        return b.__sym_ite__(t, f)
    return t if b else f


# -- assertions ------------------------------------------------------------------------------------


def _check_with(error_type: type[Exception], cond, message: Callable[[], str] | None = None) -> None:
    """Raise ``error_type`` unless ``cond``; a symbolic ``cond`` is asserted through its node (a guard
    where it has a hint, else a runtime assertion the shape environment keeps)."""
    if isinstance(cond, SymBool):
        if cond.node.expect_true():
            return
    elif type(cond) is bool or isinstance(cond, bool):
        if cond:
            return
    else:
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if message is None:
        text = "Expected cond to be True, but got False. (Could this error message be improved? If so, please report an enhancement request to PyTorch.)"
    else:
        if not callable(message):
            raise TypeError("message must be a callable")
        text = str(message())
    raise error_type(text)


def _assert(condition, message: str = "") -> None:
    """``assert condition, message`` as a function, which graph tracers record as a call (PyTorch's
    ``torch._assert``)."""
    if not condition:
        raise AssertionError(message)


def _check(cond, message: Callable[[], str] | None = None) -> None:
    """``RuntimeError`` unless ``cond`` (PyTorch's ``torch._check``)."""
    _check_with(RuntimeError, cond, message)


def _check_is_size(i, message: Callable[[], str] | None = None) -> None:
    """Check that ``i`` is a valid size (``>= 0``), and tell its shape environment it is one."""
    _check(i >= 0, message)
    if isinstance(i, SymInt):
        i.node.advise_is_size()


def _check_index(cond, message: Callable[[], str] | None = None) -> None:
    _check_with(IndexError, cond, message)


def _check_value(cond, message: Callable[[], str] | None = None) -> None:
    _check_with(ValueError, cond, message)


def _check_type(cond, message: Callable[[], str] | None = None) -> None:
    _check_with(TypeError, cond, message)


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` is a ``SymInt``, ``SymFloat`` or ``SymBool`` (not a plain number)."""
    return isinstance(value, _SYMBOLIC)
