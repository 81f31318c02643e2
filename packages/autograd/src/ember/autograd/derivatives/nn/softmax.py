"""Derivatives of softmax and log-softmax (``ember.core.aten.nn.softmax``), from their outputs.

With ``y = softmax(x)``: ``dx = y * (g - sum(g * y))``; with ``y = log_softmax(x)``:
``dx = g - exp(y) * sum(g)``, sums along ``dim``. float16 and bfloat16 compute in float32 and round
once, as PyTorch's CPU backward kernels do.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.dispatch import ops

aten = ops.aten

_REDUCED = (D.float16, D.bfloat16)


def _wide(grad, result):
    if result.dtype in _REDUCED:
        return grad.to(D.float32), result.to(D.float32), result.dtype
    return grad, result, None


@derivative(aten._softmax.default, save=("result",))
def _softmax(grad, self, dim, half_to_float, result, **_):
    g, y, narrow = _wide(grad, result)
    out = y * (g - (g * y).sum([dim], keepdim=True))
    return out if narrow is None else out.to(narrow)


@derivative(aten._log_softmax.default, save=("result",))
def _log_softmax(grad, self, dim, half_to_float, result, **_):
    g, y, narrow = _wide(grad, result)
    out = g - y.exp() * g.sum([dim], keepdim=True)
    return out if narrow is None else out.to(narrow)
