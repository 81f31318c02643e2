"""The three FFT ops PyTorch's ``torch.fft`` rests on, by NumPy's pocketfft:

- ``_fft_c2c(self, dim, normalization, forward)``: complex to complex over ``dim``;
- ``_fft_r2c(self, dim, normalization, onesided)``: real to complex, the last of ``dim`` halved
  (``n // 2 + 1``) when ``onesided``;
- ``_fft_c2r(self, dim, normalization, last_dim_size)``: the inverse of a onesided ``r2c``, Hermitian
  input to real output of ``last_dim_size`` along the last of ``dim``.

``normalization`` is PyTorch's code: 0 none, 1 ``1/sqrt(n)``, 2 ``1/n``, with ``n`` the product of the
transformed sizes (of the output's, for ``c2r``). Results are laid out with the transformed dims
innermost, as PyTorch's CPU kernels leave them. float16 and bfloat16 are refused, as on PyTorch's CPU.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as D
from ember.core import reduction as R
from ember.core.dispatch import define
from ember.core.layout import contiguous_strides
from ember.core.pointwise import unsupported
from ember.core.tensor import Tensor, empty

c2c = define("_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor", ("core",))
r2c = define("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", ("core",))
c2r = define("_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor", ("core",))


def _dims(self: Tensor, dim) -> list[int]:
    return [d % self.ndim for d in dim]


def fft_strides(shape: tuple, dims: list[int]) -> tuple:
    """Contiguous strides of ``shape`` with ``dims`` moved innermost (in their order)."""
    order = [d for d in range(len(shape)) if d not in dims] + list(dims)
    permuted = contiguous_strides(tuple(shape[d] for d in order))
    strides = [0] * len(shape)
    for position, d in enumerate(order):
        strides[d] = permuted[position]
    return tuple(strides)


def _check(self: Tensor, name: str, want_complex: bool) -> None:
    if self.dtype.itemsize == 2 and self.dtype.category == D.FLOATING:
        raise unsupported(name, self.dtype)
    if want_complex and self.dtype.category != D.COMPLEX:
        raise RuntimeError(f"{name}: expected a complex input tensor, but got {self.dtype}")
    if not want_complex and self.dtype.category != D.FLOATING:
        raise RuntimeError(f"{name}: expected a real input tensor, but got {self.dtype}")


def _scale(array: np.ndarray, sizes: list, normalization: int) -> np.ndarray:
    n = math.prod(sizes)
    if normalization == 0 or n == 0:
        return array
    return array / (math.sqrt(n) if normalization == 1 else n)


# -- complex to complex ---------------------------------------------------------------------------


@c2c.register_meta
def _c2c_meta(self: Tensor, dim, normalization: int, forward: bool) -> Tensor:
    _check(self, "_fft_c2c", True)
    dims = sorted(_dims(self, dim))  # the order of complex transforms does not matter: PyTorch sorts them
    return empty(self._shape, self.dtype, self.device, fft_strides(self._shape, dims))


@c2c.register_kernel("cpu")
def _c2c_cpu(self: Tensor, dim, normalization: int, forward: bool) -> Tensor:
    _check(self, "_fft_c2c", True)
    dims = sorted(_dims(self, dim))
    a = R.values(self)

    def compute():
        if not dims or not a.size:
            return a.copy()
        out = np.fft.fftn(a, axes=dims) if forward else np.fft.ifftn(a, axes=dims) * math.prod(a.shape[d] for d in dims)
        return _scale(out, [a.shape[d] for d in dims], normalization)

    return R.computed(self._shape, self.dtype, compute, fft_strides(self._shape, dims))


# -- real to complex ------------------------------------------------------------------------------


def _r2c_dims(self: Tensor, dim, onesided: bool) -> list[int]:
    """The halved dim stays last; a two-sided transform's order does not matter (sorted, as PyTorch's)."""
    dims = _dims(self, dim)
    return dims if onesided else sorted(dims)


def _r2c_shape(self: Tensor, dims: list[int], onesided: bool) -> tuple:
    shape = list(self._shape)
    if onesided and dims:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return tuple(shape)


@r2c.register_meta
def _r2c_meta(self: Tensor, dim, normalization: int, onesided: bool) -> Tensor:
    _check(self, "_fft_r2c", False)
    dims = _r2c_dims(self, dim, onesided)
    shape = _r2c_shape(self, dims, onesided)
    return empty(shape, self.dtype.to_complex(), self.device, fft_strides(shape, dims))


@r2c.register_kernel("cpu")
def _r2c_cpu(self: Tensor, dim, normalization: int, onesided: bool) -> Tensor:
    _check(self, "_fft_r2c", False)
    dims = _r2c_dims(self, dim, onesided)
    shape = _r2c_shape(self, dims, onesided)
    a = R.values(self)

    def compute():
        if not a.size:
            return np.zeros(shape, self.dtype.to_complex().np)
        out = np.fft.rfftn(a, axes=dims) if onesided else np.fft.fftn(a, axes=dims)
        return _scale(out, [a.shape[d] for d in dims], normalization)

    return R.computed(shape, self.dtype.to_complex(), compute, fft_strides(shape, dims))


# -- complex to real ------------------------------------------------------------------------------


def _c2r_shape(self: Tensor, dims: list[int], last_dim_size) -> tuple:
    shape = list(self._shape)
    shape[dims[-1]] = last_dim_size
    return tuple(shape)


@c2r.register_meta
def _c2r_meta(self: Tensor, dim, normalization: int, last_dim_size) -> Tensor:
    _check(self, "_fft_c2r", True)
    dims = _dims(self, dim)
    shape = _c2r_shape(self, dims, last_dim_size)
    return empty(shape, self.dtype.to_real(), self.device, fft_strides(shape, dims))


@c2r.register_kernel("cpu")
def _c2r_cpu(self: Tensor, dim, normalization: int, last_dim_size) -> Tensor:
    _check(self, "_fft_c2r", True)
    dims = _dims(self, dim)
    shape = _c2r_shape(self, dims, last_dim_size)
    a = R.values(self)
    sizes = [shape[d] for d in dims]

    def compute():
        if not math.prod(shape):
            return np.zeros(shape, self.dtype.to_real().np)
        out = np.fft.irfftn(a, s=sizes, axes=dims) * math.prod(sizes)
        return _scale(out, sizes, normalization)

    return R.computed(shape, self.dtype.to_real(), compute, fft_strides(shape, dims))
