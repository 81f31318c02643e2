"""Padding: ``constant_pad_nd`` (negative pads crop), ``reflection_pad{1,2,3}d``, ``replication_pad{1,2,3}d``,
``_pad_circular`` and the composite ``pad`` behind ``torch.nn.functional.pad``.

Pads are given last dimension first, as pairs (before, after). Reflection and replication read the
input through one index array per padded dimension (reflection mirrors about the edge without
repeating it, replication clamps, circular wraps around), gathered in one fancy-indexing step. Results keep a
channels-last input's layout, as PyTorch does.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.aten.shape.copying import checked_scalar
from ember.core.aten.shape.joining import memory_format_strides, suggest_memory_format
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor, empty

constant_pad_nd = define("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", ("core",))


def _layout(self: Tensor, shape: tuple) -> tuple:
    return memory_format_strides(shape, suggest_memory_format(self))


def _constant_plan(self: Tensor, pad) -> tuple:
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) > 2 * self.ndim:
        raise RuntimeError(
            f"Length of pad should be no more than twice the number of dimensions of the input. Pad length is "
            f"{len(pad)} while the input has {self.ndim} dimensions."
        )
    shape = list(self._shape)
    for i in range(len(pad) // 2):
        d = self.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        size = shape[d] + before + after
        if size < 0 or (shape[d] + min(before, 0) < 0) or (shape[d] + min(after, 0) < 0):
            raise RuntimeError(
                f"The input size {shape[d]}, plus negative padding {before} and {after} resulted in a negative output "
                f"size, which is invalid. Check dimension {d} of your input."
            )
        shape[d] = size
    return tuple(shape), pad


@constant_pad_nd.register_kernel("cpu")
def _constant_pad_cpu(self: Tensor, pad, value=0) -> Tensor:
    shape, pad = _constant_plan(self, pad)
    out = empty(shape, self.dtype, self.device, _layout(self, shape))
    if numel(shape) == 0:
        return out
    target, source = [slice(None)] * self.ndim, [slice(None)] * self.ndim
    for i in range(len(pad) // 2):
        d = self.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        source[d] = slice(max(0, -before), self._shape[d] - max(0, -after))
        target[d] = slice(max(0, before), shape[d] - max(0, after))
    out._array[...] = _fill_value(value, self.dtype)
    np.copyto(out._array[tuple(target)], self._array[tuple(source)])
    return out


@constant_pad_nd.register_meta
def _constant_pad_meta(self: Tensor, pad, value=0) -> Tensor:
    shape, _ = _constant_plan(self, pad)
    return empty(shape, self.dtype, self.device, _layout(self, shape))


def _fill_value(value, dtype: D.dtype):
    # A negative float does not fit an unsigned type (a negative int wraps around, as in PyTorch).
    if isinstance(value, float) and dtype is D.uint8 and value < 0:
        raise RuntimeError("value cannot be converted to type uint8_t without overflow")
    return checked_scalar(value, dtype)


@public("constant_pad_nd")
def constant_pad_nd_function(input: Tensor, pad, value=0) -> Tensor:
    return constant_pad_nd(input, list(pad), value)


def _index(size: int, before: int, after: int, reflect: bool) -> np.ndarray:
    coords = np.arange(-before, size + after)
    if reflect:
        coords = np.abs(coords)
        coords = np.where(coords >= size, 2 * (size - 1) - coords, coords)
        return coords
    return np.clip(coords, 0, size - 1)


def _define_padding(kind: str, k: int):
    reflect = kind == "reflection"
    op = define(f"{kind}_pad{k}d(Tensor self, SymInt[{2 * k}] padding) -> Tensor", ("core",))
    name = f"{kind}_pad{k}d"

    def plan(self: Tensor, padding) -> tuple:
        padding = tuple(padding)
        if len(padding) != 2 * k:
            raise RuntimeError(f"padding size is expected to be {2 * k}")
        if self.ndim not in (k + 1, k + 2) or any(n == 0 for n in self._shape[1:]):
            raise RuntimeError(
                f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other non-zero "
                f"dimensions for input, but got: {list(self._shape)}"
            )
        shape = list(self._shape)
        for i in range(k):
            d = self.ndim - 1 - i
            before, after = padding[2 * i], padding[2 * i + 1]
            if reflect and (before >= shape[d] or after >= shape[d]):
                raise RuntimeError(
                    f"Argument #4: Padding size should be less than the corresponding input dimension, but got: "
                    f"padding ({before}, {after}) at dimension {d} of input {list(self._shape)}"
                )
            size = shape[d] + before + after
            if size < 1:
                raise RuntimeError(
                    f"input ({list(self._shape)}) is too small. Calculated output size along dimension {d}: {size}"
                )
            shape[d] = size
        if self.dtype is D.bool_:
            raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(self.dtype)}'")
        return tuple(shape), padding

    @op.register_kernel("cpu")
    def cpu(self: Tensor, padding) -> Tensor:
        shape, padding = plan(self, padding)
        out = empty(shape, self.dtype, self.device, _layout(self, shape))
        if numel(shape) == 0:
            return out
        indices = [
            _index(self._shape[self.ndim - 1 - i], padding[2 * i], padding[2 * i + 1], reflect) for i in range(k)
        ]
        grid = np.ix_(*reversed(indices))
        np.copyto(out._array, self._array[(Ellipsis, *grid)])
        return out

    @op.register_meta
    def meta(self: Tensor, padding) -> Tensor:
        shape, _ = plan(self, padding)
        return empty(shape, self.dtype, self.device, _layout(self, shape))

    return op


PADDINGS = {(kind, k): _define_padding(kind, k) for kind in ("reflection", "replication") for k in (1, 2, 3)}

pad_circular = define("_pad_circular(Tensor self, SymInt[] pad) -> Tensor")


def _circular_plan(self: Tensor, pad) -> tuple:
    pad = tuple(pad)
    shape = list(self._shape)
    for i in range(len(pad) // 2):
        d = self.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if before > shape[d] or after > shape[d]:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        size = shape[d] + before + after
        if size < 0 or (size == 0 and shape[d] != 0):
            raise RuntimeError("Negative padding value is resulting in an empty dimension.")
        shape[d] = size
    return tuple(shape), pad


def _circular_index(size: int, before: int, after: int) -> np.ndarray:
    # Negative pads crop first; positive pads then wrap around what is left, as PyTorch copies them.
    low, high = max(0, -before), size - max(0, -after)
    kept = high - low
    return np.arange(-max(before, 0), kept + max(after, 0)) % kept + low


@pad_circular.register_kernel("cpu")
def _pad_circular_cpu(self: Tensor, pad) -> Tensor:
    shape, pad = _circular_plan(self, pad)
    out = empty(shape, self.dtype, self.device)
    if numel(shape) == 0:
        return out
    indices = [_circular_index(self._shape[-1 - i], pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
    np.copyto(out._array, self._array[(Ellipsis, *np.ix_(*reversed(indices)))])
    return out


@pad_circular.register_meta
def _pad_circular_meta(self: Tensor, pad) -> Tensor:
    shape, _ = _circular_plan(self, pad)
    return empty(shape, self.dtype, self.device)


pad_op = define('pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor')


@pad_op.register_decomposition
def _pad(self: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * self.ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension but got padding length "
            f"{len(pad)} and input of dimension {self.ndim}"
        )
    if mode == "constant":
        return constant_pad_nd(self, pad, 0.0 if value is None else float(value))
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    kinds = {"reflect": "reflection", "replicate": "replication", "circular": "circular"}
    if mode not in kinds:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    k = len(pad) // 2
    if k not in (1, 2, 3) or self.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {self.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    if mode == "circular":
        return pad_circular(self, pad)
    return PADDINGS[(kinds[mode], k)](self, pad)
