"""Small pieces the pointwise derivatives share: conjugation, zeros, masks, and raising as PyTorch does.

The formulas follow PyTorch's own expressions term by term (derivatives.yaml and its manual
functions), so that the gradient at special points (0, inf, nan, ties) is the same, not merely the
same almost everywhere. A tensor argument may arrive as a Python number (the ops take numbers in
tensor positions, as PyTorch's Scalar overloads do): the helpers accept both.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_like
from ember.core.aten.pointwise.ternary import where_function
from ember.core.tensor import Tensor


def conj(x):
    """The complex conjugate (PyTorch's gradients of holomorphic functions are ``grad * conj(f'(z))``)."""
    if isinstance(x, Tensor):
        return x.conj() if x.dtype.category == D.COMPLEX else x
    if isinstance(x, complex):
        return x.conjugate()
    return x


def zeros(grad: Tensor) -> Tensor:
    """A zero gradient as a tensor, not None: PyTorch gives ``.grad`` zeros through floor, sign, round..."""
    return zeros_like(grad)


def where(condition, a, b):
    return where_function(condition, a, b)


def not_implemented(name: str):
    """What PyTorch raises when backward reaches an op whose derivative it does not define."""
    raise RuntimeError(f"derivative for aten::{name} is not implemented")
