"""Derivatives of the rearranging ops (``ember.core.aten.shape.rearranging``).

``roll``, ``tile``, ``fliplr`` and ``flipud`` decompose into the ops here (and views and ``cat``).
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core.dispatch import ops

aten = ops.aten


@derivative(aten.flip.default, jvp="linear")
def _flip(grad, self, dims, **_):
    return grad.flip(dims)


@derivative(aten.repeat.default, jvp="linear")
def _repeat(grad, self, repeats, **_):
    """Each input element was copied once per tile: sum the tiles.

    The gradient, of shape ``repeats[i] * size[i]`` per dim (with leading dims for the extra
    repeats), is viewed as ``(repeats[i], size[i])`` pairs and summed over every ``repeats[i]``.
    """
    repeats = list(repeats)
    lead = len(repeats) - self.ndim
    shape = [1] * lead + list(self.shape)
    split, summed = [], []
    for i, (r, n) in enumerate(zip(repeats, shape, strict=True)):
        split += [r, n]
        summed.append(2 * i)
    total = grad.reshape(split).sum(summed) if grad.numel() else grad.new_zeros(shape)
    return total.reshape(self.shape)


@derivative(aten.tril.default, jvp="linear")
def _tril(grad, self, diagonal, **_):
    return grad.tril(diagonal)


@derivative(aten.triu.default, jvp="linear")
def _triu(grad, self, diagonal, **_):
    return grad.triu(diagonal)
