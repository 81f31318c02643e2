"""Factories built from ``arange``/``linspace``: the signal windows (``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window``), ``logspace`` and the deprecated
``range`` (which includes its end).

A periodic window of length N is the symmetric window of length N + 1 without its last point, as in
PyTorch; lengths 0 and 1 give an empty tensor and ``[1.]``.
"""

from __future__ import annotations

import math
import warnings

from ember.core import dtypes as D
from ember.core.api import functions, public
from ember.core.promotion import get_default_dtype
from ember.core.reduction import fit_out
from ember.core.tensor import Tensor


def _window(name: str, window_length: int, periodic: bool, dtype, device, requires_grad: bool, body) -> Tensor:
    dtype = get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        out = functions["ones"](window_length, dtype=dtype, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        k = functions["arange"](n, dtype=dtype, device=device)
        out = body(k, n)
        if periodic:
            out = out[:-1].contiguous()
    return out.requires_grad_(requires_grad)


@public("hann_window")
def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad: bool = False) -> Tensor:  # fmt: skip
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad)


@public("hamming_window")
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, pin_memory=False, requires_grad: bool = False) -> Tensor:  # fmt: skip
    def body(k: Tensor, n: int) -> Tensor:
        return alpha - beta * (k * (2 * math.pi / (n - 1))).cos()

    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, body)


@public("blackman_window")
def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad: bool = False) -> Tensor:  # fmt: skip
    def body(k: Tensor, n: int) -> Tensor:
        step = math.pi / (n - 1)
        return 0.08 * (k * (4 * step)).cos() - 0.5 * (k * (2 * step)).cos() + 0.42

    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, body)


@public("bartlett_window")
def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad: bool = False) -> Tensor:  # fmt: skip
    def body(k: Tensor, n: int) -> Tensor:
        return 1 - (k * (2.0 / (n - 1)) - 1).abs()

    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, body)


@public("kaiser_window")
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad: bool = False) -> Tensor:  # fmt: skip
    def body(k: Tensor, n: int) -> Tensor:
        half = (n - 1) / 2
        inside = (1 - ((k - half) / half).pow(2)).clamp(min=0)
        beta_t = functions["full"]((), beta, dtype=k.dtype, device=k.device)
        return functions["i0"](beta * inside.sqrt()) / functions["i0"](beta_t)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, body)


@public("logspace")
def logspace(start, end, steps: int, base: float = 10.0, *, out: Tensor | None = None, dtype=None, layout=None,
             device=None, pin_memory=False, requires_grad: bool = False) -> Tensor:  # fmt: skip
    dtype = get_default_dtype() if dtype is None else dtype
    exponents = functions["linspace"](start, end, steps, dtype=D.float64, device=device)
    result = functions["pow"](float(base), exponents).to(dtype)
    if out is not None:
        fit_out(out, result)
        return out.copy_(result)
    return result.requires_grad_(requires_grad)


@public("range")
def range_(start, end, step=1, *, out: Tensor | None = None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad: bool = False) -> Tensor:  # fmt: skip
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use torch.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    dtype = get_default_dtype() if dtype is None else dtype
    count = math.floor((end - start) / step) + 1
    result = (functions["arange"](count, dtype=D.float64, device=device) * step + start).to(dtype)
    if out is not None:
        fit_out(out, result)
        return out.copy_(result)
    return result.requires_grad_(requires_grad)
