"""Stride-1 2-D convolutions of float32 arrays by the compiled direct kernels (``ember.core._conv``).

A convolution with few channels is a GEMM too thin for BLAS: im2col's (O, C*kh*kw) by (C*kh*kw,
positions) product with O = 16 runs far below the machine's speed, and building the column stack
costs as much again. The direct kernels read each input row in place of the stack and hold a block
of output channels by a block of columns in registers. Their sums are in an order fixed by the
problem, not by the vector width or the thread count (see csrc/conv/module.cpp), so every machine
gives the same bits.

The input gradient of a stride-1 convolution is the forward kernel run on the output gradient, by
the weight with its channel dims swapped and its taps reversed, padded by ``d*(k-1) - p``.
The kernels split their outputs into pieces that the C++ thread pool (``ember.core._parallel``) runs
with the GIL released, each thread claiming the next piece when it is free; a convolution of under
``_PARALLEL_MACS`` multiply-adds runs in the calling thread, as waking a sleeping worker costs tens
of microseconds. ``EMBER_CONV_NUMPY=1`` turns the kernels off
(``conv_grid`` runs instead), as when they are not built.
"""

from __future__ import annotations

import os

import numpy as np

from ember.core import threads

try:
    from ember.core import _conv as _native
except ImportError:  # built without a C++ compiler: conv_grid's NumPy GEMMs run instead
    _native = None
if os.environ.get("EMBER_CONV_NUMPY", "") not in ("", "0"):
    _native = None

_PARALLEL_MACS = 1 << 21


def _run(kernel, macs: int, *args) -> None:
    kernel(*args, 0, 1, threads.get_num_threads() if macs >= _PARALLEL_MACS else 1)


def usable(*arrays: np.ndarray) -> bool:
    """Whether the direct kernels take these arrays: float32, with the extension built."""
    return _native is not None and all(a.dtype == np.float32 for a in arrays)


def target(array: np.ndarray | None, dtype, one_d: bool) -> np.ndarray | None:
    """A result's memory as the (N, C, H, W) array the kernels may write in place (of the compute
    type ``dtype``, C-contiguous; a 1-D convolution's with a height of 1), else None."""
    if array is None or array.dtype != dtype or not array.flags.c_contiguous:
        return None
    return array[:, :, None, :] if one_d else array


def _array(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def forward(x: np.ndarray, w: np.ndarray, bias, padding, dilation, groups: int, out=None) -> np.ndarray:
    """The stride-1 convolution of ``x`` (N, C, H, W) by ``w`` (O, C/groups, kh, kw), plus ``bias``
    (O,) or None: a contiguous (N, O, Ho, Wo) array, ``out`` when given (float32, C-contiguous)."""
    (ph, pw), (dh, dw) = padding, dilation
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if out is None:
        out = np.empty((n, o, h + 2 * ph - dh * (kh - 1), wd + 2 * pw - dw * (kw - 1)), np.float32)
    b = None if bias is None else _array(bias)
    macs = out.size * cg * kh * kw
    _run(_native.forward, macs, _array(x), _array(w), b, out, ph, pw, dh, dw, groups)
    return out


def takes_input_grad(w_shape, padding, dilation) -> bool:
    """Whether the input gradient is a forward convolution: padding at most ``d*(k-1)``."""
    return all(p <= d * (k - 1) for p, d, k in zip(padding, dilation, w_shape[2:], strict=True))


def input_grad(g: np.ndarray, w: np.ndarray, padding, dilation, groups: int, out=None) -> np.ndarray:
    """d(loss)/d(input), (N, C, H, W), of the stride-1 convolution by ``w`` whose output gradient is
    ``g`` (N, O, Ho, Wo), into ``out`` when given. Needs ``takes_input_grad``."""
    o, cg, kh, kw = w.shape
    og = o // groups
    flipped = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 1, 3, 4).reshape(groups * cg, og, kh, kw)
    pad = tuple(d * (k - 1) - p for d, k, p in zip(dilation, (kh, kw), padding, strict=True))
    return forward(g, flipped[:, :, ::-1, ::-1], None, pad, dilation, groups, out)


def weight_grad(x: np.ndarray, g: np.ndarray, w_shape, padding, dilation, groups: int) -> np.ndarray:
    """d(loss)/d(weight), shape ``w_shape`` = (O, C/groups, kh, kw), of the stride-1 convolution of
    ``x`` (N, C, H, W) whose output gradient is ``g`` (N, O, Ho, Wo)."""
    (ph, pw), (dh, dw) = padding, dilation
    out = np.empty(tuple(w_shape), np.float32)
    macs = g.size * out[0].size
    _run(_native.weight_grad, macs, _array(x), _array(g), out, ph, pw, dh, dw, groups)
    return out


_PARALLEL_SUMS = 1 << 16  # elements: below this the sums run in the calling thread


def channel_sums(x: np.ndarray) -> np.ndarray:
    """``x`` (N, C, S), C-contiguous float32, summed over N and S: a (C,) array (see the kernel for
    the order of the sums). Needs ``usable(x)``."""
    out = np.empty(x.shape[1], np.float32)
    _native.channel_sums(x, out, threads.get_num_threads() if x.size >= _PARALLEL_SUMS else 1)
    return out
