"""Window functions of length ``M``, as ``torch.signal.windows`` (and SciPy's) define them.

Every window is a pointwise function of ``M`` evenly spaced sample positions made by one
``linspace``; so the result is differentiable from those positions when ``requires_grad=True``,
exactly as PyTorch's are. ``sym=True`` gives the symmetric window of filter design (its span is
``M - 1`` steps); ``sym=False`` the periodic window of spectral analysis (the symmetric window of
length ``M + 1`` without its last sample, so its span is ``M`` steps).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ember.core import dtypes as _dtypes
from ember.core import functions as _f
from ember.core.creation import tensor as _tensor
from ember.core.promotion import get_default_dtype as _get_default_dtype
from ember.core.surface import strided
from ember.core.tensor import Tensor

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


def _checked_dtype(name: str, M: int, dtype, layout):
    """The dtype to build in, after the checks every window makes (PyTorch's ValueErrors)."""
    if dtype is None:
        dtype = _get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_dtypes.float32, _dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype, device, requires_grad: bool) -> Tensor | None:
    """The windows of length 0 (empty) and 1 (a single one) that some windows return as such."""
    if M == 0:
        return _f["empty"]((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return _f["ones"]((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _positions(start: float, step: float, M: int, dtype, device, requires_grad: bool) -> Tensor:
    """``start, start + step, ..., start + (M - 1) * step`` as one ``linspace``."""
    return _f["linspace"](start, start + (M - 1) * step, M, dtype=dtype, device=device, requires_grad=requires_grad)


def _span(M: int, sym: bool) -> int:
    """The number of steps the window's period covers: ``M - 1`` symmetric, ``M`` periodic."""
    return M - 1 if sym else M


def general_cosine(
    M,
    *,
    a: Iterable,
    sym: bool = True,
    dtype=None,
    layout=strided,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """The sum of cosines ``w[n] = sum_i (-1)**i * a[i] * cos(2 * pi * i * n / span)``."""
    dtype = _checked_dtype("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    angle = _positions(0.0, 2 * math.pi / _span(M, sym), M, dtype, device, requires_grad)
    signed = [(-1) ** i * coefficient for i, coefficient in enumerate(a)]
    coefficients = _tensor(signed, dtype=dtype, device=device, requires_grad=requires_grad)
    orders = _f["arange"](len(signed), dtype=dtype, device=device, requires_grad=requires_grad)
    return (coefficients.unsqueeze(-1) * _f["cos"](orders.unsqueeze(-1) * angle)).sum(0)


def general_hamming(
    M,
    *,
    alpha: float = 0.54,
    sym: bool = True,
    dtype=None,
    layout=strided,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """The two-term cosine window ``alpha - (1 - alpha) * cos(2 * pi * n / span)``."""
    return general_cosine(
        M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad
    )


def hamming(
    M: int, *, sym: bool = True, dtype=None, layout=strided, device=None, requires_grad: bool = False
) -> Tensor:
    """The Hamming window: ``general_hamming`` with ``alpha=0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None, requires_grad: bool = False) -> Tensor:
    """The Hann window: ``general_hamming`` with ``alpha=0.5``."""
    return general_hamming(
        M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad
    )


def blackman(
    M: int, *, sym: bool = True, dtype=None, layout=strided, device=None, requires_grad: bool = False
) -> Tensor:
    """The Blackman window: three cosine terms, ``a = [0.42, 0.5, 0.08]``."""
    dtype = _checked_dtype("blackman", M, dtype, layout)
    return general_cosine(
        M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad
    )


def nuttall(
    M: int, *, sym: bool = True, dtype=None, layout=strided, device=None, requires_grad: bool = False
) -> Tensor:
    """The minimum four-term Blackman-Harris window of Nuttall."""
    return general_cosine(
        M,
        a=[0.3635819, 0.4891775, 0.1365995, 0.0106411],
        sym=sym,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def bartlett(
    M: int, *, sym: bool = True, dtype=None, layout=strided, device=None, requires_grad: bool = False
) -> Tensor:
    """The triangular window that reaches zero at both ends: ``1 - |k|`` for ``k`` from -1 by ``2 / span``."""
    dtype = _checked_dtype("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    k = _positions(-1.0, 2 / _span(M, sym), M, dtype, device, requires_grad)
    return 1 - _f["abs"](k)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None, requires_grad: bool = False) -> Tensor:
    """The sine window ``sin(pi * (n + 1/2) / M)`` (periodic: over ``M + 1``), as SciPy's ``cosine``."""
    dtype = _checked_dtype("cosine", M, dtype, layout)
    if M == 0:
        return _f["empty"]((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _f["sin"](_positions(0.5 * step, step, M, dtype, device, requires_grad))


def exponential(
    M: int,
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype=None,
    layout=strided,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """The Poisson window ``exp(-|n - center| / tau)``; ``center`` defaults to the window's middle
    and may be given only for a periodic window."""
    dtype = _checked_dtype("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _f["empty"]((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(-center / tau, 1 / tau, M, dtype, device, requires_grad)
    return _f["exp"](-_f["abs"](k))


def gaussian(
    M: int,
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype=None,
    layout=strided,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """The Gaussian window ``exp(-(n - middle)**2 / (2 * std**2))``."""
    dtype = _checked_dtype("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _f["empty"]((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    scale = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(start * scale, scale, M, dtype, device, requires_grad)
    return _f["exp"](-(k**2))


def kaiser(
    M: int,
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype=None,
    layout=strided,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """The Kaiser window ``I0(beta * sqrt(1 - k**2)) / I0(beta)`` for ``k`` evenly spaced from -1,
    written as ``I0(sqrt(beta**2 - (beta * k)**2))`` so that the end points give no NaN."""
    dtype = _checked_dtype("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    # beta in the window's dtype, so that the last sample cannot pass beta by a rounding and make
    # beta**2 - k**2 negative (a NaN under the square root).
    beta_t = _tensor(float(beta), dtype=dtype, device=device)
    step = 2.0 * beta_t / _span(M, sym)
    end = _f["minimum"](beta_t, -beta_t + (M - 1) * step)
    k = _f["linspace"](-beta_t, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return _f["i0"](_f["sqrt"](beta_t * beta_t - k**2)) / _f["i0"](beta_t)
