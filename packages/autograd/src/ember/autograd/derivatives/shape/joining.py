"""Derivatives of the joining ops (``ember.core.aten.shape.joining``): each input gets its slice back.

``stack``, ``hstack`` and the others decompose into ``cat`` of views, so ``cat`` is the one formula.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops
from ember.core.layout import normalize_dim

aten = ops.aten


@derivative(aten.cat.default, jvp="linear")
def _cat(grad, tensors, dim, **_):
    # PyTorch's legacy empty tensor (shape (0,)) joins any shape and takes no part of the result.
    kept = [t for t in tensors if not (t is not None and t.ndim == 1 and t.shape[0] == 0)]
    if not kept:
        return [None] * len(tensors)
    d = normalize_dim(dim, kept[0].ndim)
    out, start = [], 0
    for t in tensors:
        if t is None or (t.ndim == 1 and t.shape[0] == 0):
            out.append(None)
            continue
        n = t.shape[d]
        out.append(grad.narrow(d, start, n))  # the engine casts it to the input's dtype
        start += n
    return out
