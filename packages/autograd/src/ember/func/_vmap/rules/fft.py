"""Batching rules of the FFT ops (``ember.core.aten.fft.transforms``): each transforms the dims it
names and maps over the others, so the batch at dim 0 is one more untouched dim and the named dims
move up by one."""

from __future__ import annotations

from ember.func._vmap.common import aten, logical_ndim
from ember.func._vmap.table import register


def _fft(call):
    x, dims = call.args[0], call.args[1]
    rank = logical_ndim(call, x)
    shifted = [d % rank + 1 for d in dims]
    return call.op(x, shifted, *call.args[2:], **call.kwargs)


register(_fft, aten._fft_c2c.default, aten._fft_r2c.default, aten._fft_c2r.default)
