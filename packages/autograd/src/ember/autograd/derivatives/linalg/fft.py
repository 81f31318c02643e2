"""Derivatives of the FFT ops (``ember.core.aten.fft.transforms``). Each transform is linear, and
its adjoint is the transform the other way with the same normalization code:

- ``c2c``: the gradient is ``c2c`` of the gradient in the other direction;
- ``r2c``: the gradient (zero-padded back to the full length where the output was one-sided) goes
  through the inverse complex transform, and its real part is the input's gradient;
- ``c2r``: the gradient's one-sided real-to-complex transform, with the entries that stand for two
  frequencies (all but the zero one and, for an even length, the last) counted twice.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.aten.shape.joining import cat
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten._fft_c2c.default, jvp="linear")
def _fft_c2c(grad, self, dim, normalization, forward, **_):
    return aten._fft_c2c.default(grad, dim, normalization, not forward)


@derivative(aten._fft_r2c.default, save=("self",), jvp="linear")
def _fft_r2c(grad, self, dim, normalization, onesided, **_):
    dims = [d % self.ndim for d in dim]
    if onesided:
        last = dims[-1]
        missing = self.shape[last] - grad.shape[last]
        if missing > 0:
            pad = [0, 0] * (grad.ndim - 1 - last) + [0, missing]
            grad = aten.constant_pad_nd.default(grad, pad, 0)
    full = aten._fft_c2c.default(grad, dims, normalization, False)
    return full.to(self.dtype)  # the real part


@derivative(aten._fft_c2r.default, jvp="linear")
def _fft_c2r(grad, self, dim, normalization, last_dim_size, **_):
    dims = [d % self.ndim for d in dim]
    last = dims[-1]
    half = aten._fft_r2c.default(grad, dims, normalization, True)
    doubled = grad.shape[last] - half.shape[last]
    if doubled <= 0:
        return half
    parts = [half.narrow(last, 0, 1), half.narrow(last, 1, doubled) * 2]
    rest = half.shape[last] - 1 - doubled
    if rest > 0:
        parts.append(half.narrow(last, 1 + doubled, rest))
    return cat(parts, last)
