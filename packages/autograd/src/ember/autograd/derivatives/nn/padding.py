"""Derivatives of the padding ops (``ember.core.aten.nn.padding``).

``constant_pad_nd``'s gradient is the same op with the pads negated: it crops what was padded and
pads with zeros what a negative pad cropped. Reflection, replication and circular padding copy each
output position from one input position; their gradients sum ``grad`` back into those positions.
Which position is found by running the forward op itself on a tensor of flat input positions, so
the backward can never disagree with the forward about edges, negative pads or wrap-around. The sum
runs one padded dim at a time: the centre of the output is the input's own copy, so the gradient
starts from that slice of ``grad`` and only the border positions are added back (``index_add``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ember.autograd.registry import derivative
from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function
from ember.core.aten.nn.padding import PADDINGS, pad_circular
from ember.core.creation import as_tensor
from ember.core.dispatch import ops
from ember.core.tensor import from_array

aten = ops.aten


@derivative(aten.constant_pad_nd.default, jvp="linear")
def _constant_pad_nd(grad, self, pad, value, **_):
    return aten.constant_pad_nd.default(grad, [-p for p in pad], 0)


def _source_indices(input_shape, k: int, pad_op, pad) -> list[np.ndarray]:
    """For each of the last ``k`` dims, the input index each output index copies: the forward op run
    on a tensor of flat positions (with a leading dim of 1, which the padding ops want), decoded per
    dim. Padding is separable, so any line along a dim gives that dim's indices."""
    spatial = tuple(input_shape[len(input_shape) - k :])
    positions = from_array(np.arange(math.prod(spatial), dtype=np.int64).reshape(1, *spatial), D.int64)
    # The CPU kernel itself, past any dispatch mode: the positions depend on the shapes alone, so a
    # backward traced on fake tensors (AOT autograd, ember.compile) finds them as eager does.
    source = np.asarray(pad_op.redispatch_backend(positions, (positions, pad), {}).numpy())[0]
    indices = []
    for axis in range(k):
        line = source[tuple(slice(None) if a == axis else 0 for a in range(k))]
        stride = math.prod(spatial[axis + 1 :])
        indices.append((line // stride) % spatial[axis])
    return indices


def _fold_axis(grad, dim: int, size: int, index: np.ndarray):
    """Sum ``grad`` along ``dim`` into ``size`` positions, output position j going to ``index[j]``.
    Where the output holds the input unchanged in one run (the centre of a pad), that run is the
    starting value and only the other positions are added: a copy and a few small adds."""
    as_index = functools.partial(as_tensor, dtype=D.int64, device=grad.device)
    starts = [
        c for c in range(len(index) - size + 1) if index[c] == 0 and (index[c : c + size] == np.arange(size)).all()
    ]
    if not starts:
        total = zeros_function(_resized(grad.shape, dim, size), dtype=grad.dtype, device=grad.device)
        return aten.index_add.default(total, dim, as_index(index), grad)
    start = starts[0]
    centre = aten.slice.Tensor(grad, dim, start, start + size)
    rest = np.concatenate([np.arange(start), np.arange(start + size, len(index))])
    if rest.size == 0:
        return centre
    border = grad.index_select(dim, as_index(rest))
    return aten.index_add.default(centre, dim, as_index(index[rest]), border)


def _resized(shape, dim: int, size: int) -> list:
    shape = list(shape)
    shape[dim] = size
    return shape


def _fold(grad, input_shape, k: int, pad_op, pad):
    """The gradient of ``pad_op`` (reflection, replication or circular padding of the last ``k`` dims)."""
    if grad.numel() == 0:
        return zeros_function(tuple(input_shape), dtype=grad.dtype, device=grad.device)
    indices = _source_indices(input_shape, k, pad_op, pad)
    ndim = len(input_shape)
    for axis in range(k):
        dim = ndim - k + axis
        grad = _fold_axis(grad, dim, input_shape[dim], indices[axis])
    return grad


def _register(op, k: int) -> None:
    @derivative(op, jvp="linear")
    def _(grad, self, padding, **_):
        return _fold(grad, self.shape, k, op, padding)


for (_kind, _k), _op in PADDINGS.items():
    _register(_op, _k)


@derivative(aten._pad_circular.default, jvp="linear")
def _pad_circular(grad, self, pad, **_):
    return _fold(grad, self.shape, len(pad) // 2, pad_circular, pad)
