"""Closeness and equality: ``isclose`` (an op, a composite of comparisons as in PyTorch), and
``allclose`` and ``equal``, which answer with a Python bool and so are functions over ops.

``isclose`` counts ``|self - other| <= atol + |rtol * other|`` where the difference is finite, plus
exact equality (infinities of one sign) and, with ``equal_nan``, nan against nan. Integer and bool
tensors compare in the default float dtype, so an unsigned difference cannot wrap.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.dispatch import define, ops
from ember.core.pointwise import type_name
from ember.core.promotion import get_default_dtype
from ember.core.tensor import Tensor

aten = ops.aten

isclose = define(
    "isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor"
)


@isclose.register_decomposition
def _isclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    if self.dtype is not other.dtype:
        raise RuntimeError(f"{type_name(self.dtype)} did not match {type_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = self == other
    if equal_nan and self.dtype.category >= D.FLOATING:
        close = close | (self.isnan() & other.isnan())
    if rtol == 0 and atol == 0:
        return close
    if self.dtype.category < D.FLOATING:
        self, other = self.to(get_default_dtype()), other.to(get_default_dtype())
    allowed = (other * rtol).abs() + atol
    actual = (self - other).abs()
    return close | (actual.isfinite() & (actual <= allowed))


@public("isclose")
def _isclose_function(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    return isclose(input, other, rtol, atol, equal_nan)


method("isclose")(_isclose_function)


@public("allclose")
def _allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


method("allclose")(_allclose)


@public("equal")
def _equal(input: Tensor, other: Tensor) -> bool:
    """Same shape and equal elements (after promotion; nan equals nothing)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"equal(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all())


method("equal")(_equal)
