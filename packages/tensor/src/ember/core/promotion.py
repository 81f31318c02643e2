"""Type promotion, PyTorch's rules (not NumPy's).

``promote_types`` is the symmetric table for two dtypes. ``result_type`` ranks its operands in three
tiers: tensors with dimensions, 0-dim tensors, and Python scalars. A lower tier changes the result
only when it is of a higher category (bool < integral < floating < complex): ``int64 tensor + 2.5``
is float32 (the default dtype), ``float16 tensor + float64 0-dim tensor`` stays float16, and
``int8 tensor + int64 0-dim tensor`` stays int8.
"""

from __future__ import annotations

import builtins
from functools import cache

from ember.core import dtypes as D
from ember.core.dtypes import BOOL, COMPLEX, FLOATING, INTEGRAL, dtype
from ember.core.dtypes_extra import is_extra, promote_extra
from ember.core.symbolic import SymBool, SymFloat, SymInt

_default_float: dtype = D.float32


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: dtype) -> None:
    global _default_float
    if d not in (D.float16, D.bfloat16, D.float32, D.float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def default_complex_dtype() -> dtype:
    if _default_float is D.float16:
        return D.complex32
    return D.complex128 if _default_float is D.float64 else D.complex64


def _check_dtype(fn: str, name: str, position: int, value) -> None:
    if not isinstance(value, dtype):
        raise TypeError(
            f"{fn}(): argument '{name}' (position {position}) must be ember.dtype, not {type(value).__name__}"
        )


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """``ember.promote_types``: the smallest dtype both promote to (PyTorch's table)."""
    _check_dtype("promote_types", "type1", 1, type1)
    _check_dtype("promote_types", "type2", 2, type2)
    return _promote(type1, type2)


@cache
def _promote(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if is_extra(a) or is_extra(b):  # cached, so this costs nothing after the first call
        return promote_extra(a, b, _promote)
    if a.category != b.category:
        high, low = (a, b) if a.category > b.category else (b, a)
        if high.category == COMPLEX and low is D.float64:
            return D.complex128
        return high
    if a.category == INTEGRAL:
        if a.is_signed == b.is_signed:
            return a if a.itemsize >= b.itemsize else b
        signed, unsigned = (a, b) if a.is_signed else (b, a)
        return signed if signed.itemsize > unsigned.itemsize else D.int16
    if a.category == FLOATING:
        if {a, b} == {D.float16, D.bfloat16}:
            return D.float32
        return a if a.itemsize >= b.itemsize else b
    return a if a.itemsize >= b.itemsize else b  # complex


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it stands alone (``ember.tensor(2.5)``)."""
    if isinstance(value, builtins.bool):
        return D.bool_
    if isinstance(value, builtins.int):
        return D.int64
    if isinstance(value, builtins.float):
        return _default_float
    if isinstance(value, builtins.complex):
        return default_complex_dtype()
    # Symbolic scalars (sizes under dynamic shapes) promote as the Python numbers they stand for.
    if isinstance(value, SymInt):
        return D.int64
    if isinstance(value, SymFloat):
        return _default_float
    if isinstance(value, SymBool):
        return D.bool_
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """The result of a higher tier meeting a lower one."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        if higher.category != FLOATING:
            return lower
        return D.complex32 if higher is D.float16 else higher.to_complex()  # half + 1j is complex32
    if higher.category == FLOATING:
        return higher
    if higher.category == BOOL or lower.category == FLOATING:
        return _promote(higher, lower)
    return higher


# Python numbers and the symbolic ones that stand for them; a tuple made once, not a union per call.
_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex, SymInt, SymFloat, SymBool)


def result_type(*operands) -> dtype:
    """``ember.result_type``: the dtype of an arithmetic op on these tensors and scalars."""
    dim = zero = wrapped = None
    for op in operands:
        d = getattr(op, "dtype", None)
        if isinstance(d, dtype) and hasattr(op, "ndim"):
            if op.ndim > 0:
                dim = d if dim is None else _promote(dim, d)
            else:
                zero = d if zero is None else _promote(zero, d)
        elif isinstance(
            op, builtins.bool | builtins.int | builtins.float | builtins.complex | SymInt | SymFloat | SymBool
        ):
            d = scalar_dtype(op)
            wrapped = d if wrapped is None else _promote(wrapped, d)
        else:
            raise TypeError(f"result_type: expected tensors or Python numbers, got {type(op).__name__}")
    out = _combine(dim, _combine(zero, wrapped))
    if out is None:
        raise TypeError("result_type needs at least one operand")
    return out


_CAST_ORDER = {BOOL: 0, INTEGRAL: 1, FLOATING: 2, COMPLEX: 3}


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's rule: casting never lowers the category (float to int, complex to float, to bool)."""
    _check_dtype("can_cast", "from_", 1, from_)
    _check_dtype("can_cast", "to", 2, to)
    return _CAST_ORDER[from_.category] <= _CAST_ORDER[to.category]
