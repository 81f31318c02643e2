"""GELU and its gradient: ``gelu`` (the activation) and ``gelu_backward`` (one kernel for its derivative).

``gelu(x) = x Phi(x)``, with ``approximate='tanh'`` replacing Phi by ``(1 + tanh(sqrt(2/pi) (x +
0.044715 x^3))) / 2``. ``gelu_backward(dy, x) = dy (Phi(x) + x phi(x))`` is PyTorch's
``aten.gelu_backward``: the autograd formula of gelu calls it, so the backward pass costs one kernel
rather than a dozen pointwise ops.

In float32 (and float16/bfloat16, which compute in float32) erf comes from Abramowitz and Stegun
7.1.26, ``erf(z) = 1 - t (a1 + t (a2 + ...)) exp(-z^2)`` with ``t = 1 / (1 + p |z|)``, absolute error
below 1.5e-7: PyTorch's vectorized float32 GELU kernels evaluate it the same way, and in float32 it
costs a few passes where the float64 erf costs dozens. float64 uses the float64 erf of
``ember.core.special``. Both kernels work in place on fresh buffers, in PyTorch's order of operations;
the float32 ones go through the array in cache-sized blocks, on every worker thread.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as D
from ember.core.pointwise import define_pointwise
from ember.core.special import blockwise
from ember.core.special import erf as _erf_f64
from ember.core.threads import parallel_blocks

_AS_P = np.float32(0.3275911)
_AS_A = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_SQRT1_2 = math.sqrt(0.5)
_PDF_SCALE = 2.0 / math.sqrt(math.pi) * _SQRT1_2 * 0.5  # 1 / sqrt(2 pi)
_TANH_BETA = math.sqrt(2.0) * 2.0 / math.sqrt(math.pi) * 0.5  # sqrt(2 / pi)
_TANH_KAPPA = 0.044715


def erf_float32(z: np.ndarray) -> np.ndarray:
    """erf of a 1-d float32 array by Abramowitz and Stegun 7.1.26 (a fresh array)."""
    az = np.abs(z)
    t = az * _AS_P
    t += np.float32(1)
    np.reciprocal(t, out=t)
    poly = t * _AS_A[0]  # Horner's rule, its first product made from t rather than a filled array
    poly += _AS_A[1]
    for coefficient in _AS_A[2:]:
        poly *= t
        poly += coefficient
    poly *= t
    np.square(az, out=az)
    np.negative(az, out=az)
    np.exp(az, out=az)
    poly *= az  # 1 - erf(|z|)
    np.subtract(np.float32(1), poly, out=poly)
    np.copysign(poly, z, out=poly)
    return poly


def _flat(fn):
    """Run ``fn`` on the 1-d view of its first argument (NumPy gives scalars, not arrays, for 0-d
    arithmetic, and the in-place steps need arrays), giving the result the argument's shape."""

    def run(x, *args):
        return fn(x.reshape(-1), *args).reshape(x.shape)

    return run


# -- gelu -----------------------------------------------------------------------------------------


def _in_blocks(kernel):
    """Run ``kernel(x, out)`` (1-d float32 blocks) over a float32 array, in cache-sized blocks on
    the worker threads (``ember.core.threads``), into a fresh array of its shape."""

    def run(x):
        flat = x.reshape(-1)
        out = np.empty(flat.shape, np.float32)
        parallel_blocks(flat.size, lambda start, stop: kernel(flat[start:stop], out[start:stop]))
        return out.reshape(x.shape)

    return run


@_in_blocks
def _gelu_float32(x, out):
    result = erf_float32(x * np.float32(_SQRT1_2))
    result += np.float32(1)
    result *= x  # in PyTorch's order: x (1 + erf) overflows where it overflows
    np.multiply(result, np.float32(0.5), out=out)


def _gelu_float64(x):
    cdf = _erf_f64(x / np.sqrt(2.0))
    cdf += 1.0
    half = 0.5 * x
    half *= cdf
    return half


def _gelu_tanh(a):
    inner = np.sqrt(2.0 / np.pi).astype(a.dtype) * (a + np.asarray(_TANH_KAPPA, a.dtype) * a * a * a)
    return 0.5 * a * (1.0 + np.tanh(inner))


def gelu(a, *, approximate="none"):
    """The compute function of ``aten.gelu`` on a float32 or float64 array.

    ``gelu(+inf)`` is +inf in every dtype, the value of ``x Phi(x)``. PyTorch's own answer depends
    on the machine (its vectorized kernels give nan on some CPUs and dtypes, inf on others); ours
    does not.
    """
    if approximate == "tanh":
        return _gelu_tanh(a)
    return _gelu_float32(a) if a.dtype == np.float32 else blockwise(_gelu_float64, a, a.dtype)


def check_gelu(p, inputs, params) -> None:
    _check_approximate(params)
    d = inputs[0].dtype
    if d.category != D.FLOATING:
        raise NotImplementedError(f"\"GeluKernelImpl\" not implemented for '{D.SCALAR_TYPE_NAMES[d]}'")


def _check_approximate(params) -> None:
    if params["approximate"] not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")


# -- gelu_backward --------------------------------------------------------------------------------


def _slope_float32(x, out):
    """Phi(x) + x phi(x), the derivative of exact GELU, for a 1-d float32 array (into ``out``)."""
    cdf = erf_float32(x * np.float32(_SQRT1_2))
    cdf += np.float32(1)
    cdf *= np.float32(0.5)
    pdf = np.square(x)
    pdf *= np.float32(-0.5)
    np.exp(pdf, out=pdf)
    pdf *= np.float32(_PDF_SCALE)
    pdf *= x
    np.add(pdf, cdf, out=out)


def _gelu_backward_float32(grad, x):
    """``grad (Phi(x) + x phi(x))`` for float32 arrays of one shape, block by block."""
    g, flat = grad.reshape(-1), x.reshape(-1)
    out = np.empty(flat.shape, np.float32)

    def work(start: int, stop: int) -> None:
        block = out[start:stop]
        _slope_float32(flat[start:stop], block)
        np.multiply(g[start:stop], block, out=block)

    parallel_blocks(flat.size, work)
    return out.reshape(x.shape)


def _slope_float64(x):
    cdf = _erf_f64(x * _SQRT1_2)
    cdf += 1.0
    cdf *= 0.5
    pdf = np.square(x)
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= _PDF_SCALE
    pdf *= x
    pdf += cdf
    return pdf


@_flat
def _slope_tanh(x):
    dtype = x.dtype.type
    x_sq = x * x
    inner = dtype(_TANH_BETA) * (x + dtype(_TANH_KAPPA) * (x_sq * x))
    tanh_inner = np.tanh(inner)
    left = dtype(0.5) * x
    left_derivative = dtype(0.5) * (dtype(1) + tanh_inner)
    inner_derivative = dtype(_TANH_BETA) * (dtype(1) + dtype(3 * _TANH_KAPPA) * x_sq)
    right_derivative = left * (dtype(1) - tanh_inner * tanh_inner) * inner_derivative
    return left_derivative + right_derivative


def _gelu_backward(grad, x, *, approximate="none"):
    if approximate == "tanh":
        slope = _slope_tanh(x)
    elif x.dtype == np.float32:
        if np.shape(grad) == x.shape and np.result_type(grad) == np.float32:
            return _gelu_backward_float32(grad, x)
        slope = _in_blocks(_slope_float32)(x)
    else:
        slope = blockwise(_slope_float64, x, x.dtype)
    if slope.shape == np.broadcast_shapes(slope.shape, np.shape(grad)):
        np.multiply(grad, slope, out=slope)
        return slope
    return grad * slope


def _check_gelu_backward(p, inputs, params) -> None:
    _check_approximate(params)
    if p.result.category != D.FLOATING:
        raise NotImplementedError(f"\"GeluBackwardKernelImpl\" not implemented for '{D.SCALAR_TYPE_NAMES[p.result]}'")


gelu_backward = define_pointwise(
    "gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
    _gelu_backward,
    n_inputs=2,
    inplace=False,
    out_overload=None,
    check=_check_gelu_backward,
)
