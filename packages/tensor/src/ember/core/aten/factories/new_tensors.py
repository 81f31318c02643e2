"""``Tensor.new_empty``, ``new_empty_strided``, ``new_zeros``, ``new_ones``, ``new_full`` and ``new_tensor``.

Each makes a fresh tensor with ``self``'s dtype and device unless told otherwise; nothing else of
``self`` (its shape, strides or values) carries over. The first five are ops, as in PyTorch, whose
decompositions call the factories; ``new_tensor`` copies data like ``ember.tensor``. As in PyTorch,
``new_full``'s dtype is ``self``'s, not inferred from the fill value.
"""

from __future__ import annotations

import warnings

from ember.core import dtypes as D
from ember.core.api import method
from ember.core.aten.factories import factories
from ember.core.creation import tensor as tensor_from_data
from ember.core.dispatch import define
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor

_OPTIONS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"


def _options(self: Tensor, dtype, device) -> dict:
    return {
        "dtype": self.dtype if dtype is None else D.to_dtype(dtype),
        "device": self.device if device is None else device,
    }


new_empty = define(f"new_empty(Tensor self, SymInt[] size, *, {_OPTIONS}) -> Tensor")
new_empty_strided = define(f"new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, {_OPTIONS}) -> Tensor")
new_zeros = define(f"new_zeros(Tensor self, SymInt[] size, *, {_OPTIONS}) -> Tensor")
new_ones = define(f"new_ones(Tensor self, SymInt[] size, *, {_OPTIONS}) -> Tensor")
new_full = define(f"new_full(Tensor self, SymInt[] size, Scalar fill_value, *, {_OPTIONS}) -> Tensor")


@new_empty.register_decomposition
def _new_empty(self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return factories.empty(tuple(size), **_options(self, dtype, device))


@new_empty_strided.register_decomposition
def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return factories.empty_strided(tuple(size), tuple(stride), **_options(self, dtype, device))


@new_zeros.register_decomposition
def _new_zeros(self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return factories.zeros(tuple(size), **_options(self, dtype, device))


@new_ones.register_decomposition
def _new_ones(self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return factories.ones(tuple(size), **_options(self, dtype, device))


@new_full.register_decomposition
def _new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return factories.full(tuple(size), fill_value, **_options(self, dtype, device))


# -- the Python surface ------------------------------------------------------------------------------------


def _size(name: str, size) -> tuple:
    """``new_zeros(2, 3)``, ``new_zeros((2, 3))`` and ``new_zeros([2, 3])`` are the same call."""
    if len(size) == 1 and isinstance(size[0], list | tuple):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, INT_LIKE) or isinstance(s, bool):
            raise TypeError(
                f"{name}(): argument 'size' must be tuple of ints, but found element of type {type(s).__name__}"
            )
    return tuple(size)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_(True) if requires_grad else t


def _check_sequence(name: str, value) -> tuple:
    if not isinstance(value, list | tuple):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not {type(value).__name__}")
    return _size(name, tuple(value))


@method("new_empty")
def _new_empty_method(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return _finish(new_empty(self, _size("new_empty", size), dtype=dtype, device=device), requires_grad)


@method("new_zeros")
def _new_zeros_method(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return _finish(new_zeros(self, _size("new_zeros", size), dtype=dtype, device=device), requires_grad)


@method("new_ones")
def _new_ones_method(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return _finish(new_ones(self, _size("new_ones", size), dtype=dtype, device=device), requires_grad)


@method("new_full")
def _new_full_method(
    self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
):
    size = _check_sequence("new_full", size)
    return _finish(new_full(self, size, fill_value, dtype=dtype, device=device), requires_grad)


@method("new_empty_strided")
def _new_empty_strided_method(
    self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
):
    size, stride = _check_sequence("new_empty_strided", size), _check_sequence("new_empty_strided", stride)
    return _finish(new_empty_strided(self, size, stride, dtype=dtype, device=device), requires_grad)


@method("new_tensor")
def _new_tensor_method(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
    dtype = self.dtype if dtype is None else D.to_dtype(dtype)
    result = tensor_from_data(data, dtype=dtype, device=self.device if device is None else device)
    return _finish(result, requires_grad)
