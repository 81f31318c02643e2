"""Derivatives of the padding ops (``ember.core.families.padding``).

``constant_pad_nd``'s gradient is the same op with the pads negated: it crops what was padded and
pads with zeros what a negative pad cropped. Reflection, replication and circular padding copy each
output position from one input position; their gradients sum ``grad`` back into those positions.
Which position is found by running the forward op itself on a tensor of flat input positions, so
the backward can never disagree with the forward about edges, negative pads or wrap-around; the sum
is one ``index_add`` over the flattened padded dims.
"""

from __future__ import annotations

from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.api import functions
from ember.core.dispatch import ops
from ember.core.families.padding import PADDINGS, pad_circular

aten = ops.aten


@derivative(aten.constant_pad_nd.default, jvp="linear")
def _constant_pad_nd(grad, self, pad, value, **_):
    return aten.constant_pad_nd.default(grad, [-p for p in pad], 0)


def _fold(grad, input_shape, k: int, pad_op, pad):
    """Sum ``grad`` over the input positions that ``pad_op`` copied into each output position of
    the last ``k`` dims."""
    lead = tuple(input_shape[: len(input_shape) - k])
    spatial = tuple(input_shape[len(input_shape) - k :])
    inner = 1
    for s in spatial:
        inner *= s
    outer = 1
    for s in lead:
        outer *= s
    # The padding ops want a leading (batch or channel) dim: one of size 1 carries the positions.
    positions = functions["arange"](inner, dtype=D.int64, device=grad.device).reshape(1, *spatial)
    source = pad_op(positions, pad).reshape(-1)
    rows = grad.reshape(outer, source.shape[0])
    total = functions["zeros"]((outer, inner), dtype=grad.dtype, device=grad.device)
    return aten.index_add.default(total, 1, source, rows).reshape(input_shape)


def _register(op, k: int) -> None:
    @derivative(op, jvp="linear")
    def _(grad, self, padding, **_):
        return _fold(grad, self.shape, k, op, padding)


for (_kind, _k), _op in PADDINGS.items():
    _register(_op, _k)


@derivative(aten._pad_circular.default, jvp="linear")
def _pad_circular(grad, self, pad, **_):
    return _fold(grad, self.shape, len(pad) // 2, pad_circular, pad)
