"""``ember.sym_sqrt``, ``sym_sum``, ``sym_fresh_size``, ``sym_constrain_range`` and
``sym_constrain_range_for_size``: functions of numbers that may be symbolic (``SymInt``, ``SymFloat``).

On plain numbers they compute, or check, at once. On symbolic ones they build an expression, or
narrow the symbol's range in its shape environment (``ember.fx.experimental.symbolic_shapes``).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from ember.core.symbolic import SymFloat, SymInt, sym_float

__all__ = ["sym_constrain_range", "sym_constrain_range_for_size", "sym_fresh_size", "sym_sqrt", "sym_sum"]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def sym_sqrt(a: Any) -> Any:
    """The square root of a number, symbolic ones included (a ``SymFloat`` for a ``SymInt``)."""
    if isinstance(a, SymInt):
        a = sym_float(a)
    if isinstance(a, SymFloat):
        return a**0.5
    return math.sqrt(a)


def sym_sum(*args: Any) -> Any:
    """The sum of numbers, given as ``sym_sum(a, b, c)`` or ``sym_sum([a, b, c])``."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    if not any(isinstance(a, SymInt | SymFloat) for a in args):
        return builtins.sum(args)
    total: Any = 0
    for a in args:
        total = total + a
    return total


def sym_fresh_size(expr: Any) -> Any:
    """A size equal to ``expr`` that tracing sees as a new (unbacked) symbol, read through a tensor."""
    from ember.core.creation import tensor

    return tensor(expr).item()


def _check_range(size: int, low: int, high: int) -> None:
    if not low <= size <= high:
        raise RuntimeError(f"Invalid value range for {size} between [{low}, {high}].")


def sym_constrain_range(size: Any, *, min: int | None = None, max: int | None = None) -> None:
    """Assert that the integer ``size`` lies in ``[min, max]``; a symbolic one is narrowed to it."""
    if min is not None and max is not None and max < min:
        raise RuntimeError(f"Max must be greater than or equal to min. Got min={min} max={max}")
    low = _INT64_MIN if min is None else min
    high = _INT64_MAX if max is None else max
    if isinstance(size, SymInt):
        node = size.node
        node.shape_env.constrain_range(node.expr, min=low, max=high)
        return
    if isinstance(size, builtins.int):
        _check_range(size, low, high)


def sym_constrain_range_for_size(size: Any, *, min: int | None = None, max: int | None = None) -> None:
    """As ``sym_constrain_range`` for a size: ``min`` is at least 0, and a symbolic one is marked as a
    size (taken as at least 2 where a 0 or 1 would need a special case)."""
    if max is not None and max <= 2:
        raise RuntimeError(f"Max value to constrain_range_for_size must be greater than 2. got: {max}")
    low = 0 if min is None else min
    if isinstance(size, SymInt):
        node = size.node
        node.shape_env.advise_is_size(node.expr)
        node.shape_env.constrain_range(node.expr, min=low, max=_INT64_MAX if max is None else max)
        return
    if isinstance(size, builtins.int):
        _check_range(size, low, _INT64_MAX if max is None else max)
