"""Complex tensors taken apart as views: ``view_as_real``, ``view_as_complex``, ``real`` and ``imag``.

A complex element is two reals side by side (real part first), so a complex tensor's storage read
as its real dtype is the same tensor with a trailing dimension of 2: every stride and the offset
double and the new last stride is 1. ``view_as_complex`` is the reverse, and needs the layout that
makes it possible (last dimension of 2 with stride 1, even strides and offset). ``real`` and
``imag`` select one of the two columns of ``view_as_real``; like every view they share the base's
storage, so writing through them (``z.real.mul_(2)``, ``z.imag = y``) changes the complex tensor.

The two view ops are ops of their own (with derivatives in ``ember.autograd``); ``real`` and
``imag`` are composites of them and ``select``, as in PyTorch, so their gradients follow.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.dispatch import define
from ember.core.tensor import Tensor, _array_view, _new, note_view

_VIEW = ("view", "core")

view_as_real = define("view_as_real(Tensor(a) self) -> Tensor(a)", _VIEW)
view_as_complex = define("view_as_complex(Tensor(a) self) -> Tensor(a)", _VIEW)


def _view_of(self: Tensor, shape: tuple, stride: tuple, offset: int, dtype: D.dtype) -> Tensor:
    out = _new(Tensor, self._storage, shape, stride, offset, dtype, None)
    # An empty view reads nothing; NumPy refuses an offset past the end of an empty buffer.
    out._array = _array_view(self._storage, shape, stride, offset if all(shape) else 0, dtype)
    note_view(out, self._base if self._base is not None else self)
    return out


@view_as_real.register_kernel("*")
def _view_as_real(self: Tensor) -> Tensor:
    if self.dtype.category != D.COMPLEX:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    shape = (*self._shape, 2)
    stride = (*(s * 2 for s in self._stride), 1)
    return _view_of(self, shape, stride, self._offset * 2, self.dtype.to_real())


_COMPLEX_OF = {D.float16: D.complex32, D.float32: D.complex64, D.float64: D.complex128}


@view_as_complex.register_kernel("*")
def _view_as_complex(self: Tensor) -> Tensor:
    dtype = _COMPLEX_OF.get(self.dtype)
    if dtype is None:
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar "
            f"type: {D.SCALAR_TYPE_NAMES[self.dtype]}"
        )
    shape, stride = self._shape, self._stride
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    for s in stride[:-1]:
        if s % 2:
            raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _view_of(self, shape[:-1], tuple(s // 2 for s in stride[:-1]), self._offset // 2, dtype)


@public("view_as_real")
def _view_as_real_function(input: Tensor) -> Tensor:
    return view_as_real(input)


@public("view_as_complex")
def _view_as_complex_function(input: Tensor) -> Tensor:
    return view_as_complex(input)


@public("real")
def real(input: Tensor) -> Tensor:
    """The real part as a view (``input`` itself when it is not complex)."""
    if input.dtype.category != D.COMPLEX:
        return input
    return view_as_real(input).select(-1, 0)


@public("imag")
def imag(input: Tensor) -> Tensor:
    """The imaginary part as a view; real tensors have none (PyTorch's RuntimeError)."""
    if input.dtype.category != D.COMPLEX:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return view_as_real(input).select(-1, 1)


def _set_part(part: Tensor, value) -> None:
    part.copy_(value)


def _real_get(self: Tensor) -> Tensor:
    return real(self)


def _real_set(self: Tensor, value) -> None:
    _set_part(real(self), value)


def _imag_get(self: Tensor) -> Tensor:
    return imag(self)


def _imag_set(self: Tensor, value) -> None:
    _set_part(imag(self), value)


REAL_PROPERTY = property(_real_get, _real_set, doc="The real part, a view that can be written to.")
IMAG_PROPERTY = property(_imag_get, _imag_set, doc="The imaginary part, a view that can be written to.")
Tensor.real = REAL_PROPERTY
Tensor.imag = IMAG_PROPERTY
