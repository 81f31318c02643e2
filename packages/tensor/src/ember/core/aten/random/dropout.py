"""Dropout: ``native_dropout`` (output and keep-mask), ``dropout`` and ``dropout_``.

An element is kept when its uniform draw (``rand``'s float32, one counter per element in row-major
order) is below ``1 - p``: the mask is ``bernoulli_(1 - p)``, so ``p = 0`` keeps all and ``p = 1``
none. Kept elements are scaled by ``1 / (1 - p)``, computed in the input's dtype as PyTorch's
``div_`` does, and ``dropout`` returns ``input * noise`` with ``noise = mask / (1 - p)``.

As in PyTorch, ``dropout`` returns its input itself when not training, when ``p == 0`` or when the
input is empty, and ``input * 0`` when ``p == 1`` (so inf and NaN become NaN). Under autograd,
``dropout`` and ``dropout_`` run as ``native_dropout``, whose mask the gradient reads.
``native_dropout`` returns a new tensor always, with a bool mask (all True when not training).

Each op's meta function takes the same branches (they depend on ``p``, ``train`` and whether the
input is empty, never on its values) and runs the mask sampler's checks without drawing.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.aten.random.random_fill import bernoulli_float, bernoulli_meta
from ember.core.dispatch import define
from ember.core.layout import dense_strides_like, numel
from ember.core.pointwise import type_name
from ember.core.tensor import Tensor
from ember.core.tensor import empty as allocate

native_dropout_op = define("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)", ("random", "core"))
dropout_op = define("dropout(Tensor input, float p, bool train) -> Tensor", ("random",))
dropout_inplace = define("dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", ("random", "inplace"))


def _like(t: Tensor, dtype: D.dtype) -> Tensor:
    return allocate(t._shape, dtype, t.device, dense_strides_like(t._shape, t._stride))


def _check_p(p: float) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def _scale(dtype: D.dtype, p: float):
    """``1 / (1 - p)`` as PyTorch's ``div_`` computes it for ``dtype`` (float32 math for the half types)."""
    work = np.float64 if dtype is D.float64 else np.float32
    return (work(1.0) / work(1.0 - p)).astype(dtype.np)


def _check_floating(t: Tensor) -> None:
    if t.dtype.category < D.FLOATING:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {type_name(t.dtype)}")


@native_dropout_op.register_meta
def _native_dropout_meta(input: Tensor, p: float, train: bool | None = None):
    if not numel(input._shape):
        return input, _like(input, input.dtype)
    if train is False:
        return _like(input, input.dtype), _like(input, D.bool_)
    _check_floating(input)
    mask = bernoulli_meta(_like(input, D.bool_), 1.0 - p)
    return _like(input, input.dtype), mask


@native_dropout_op.register_kernel("cpu")
def _native_dropout(input: Tensor, p: float, train: bool | None = None):
    if not numel(input._shape):
        return input, _like(input, input.dtype)
    if train is False:
        output = _like(input, input.dtype)
        mask = _like(input, D.bool_)
        np.copyto(output._array, input._array)
        mask._array[...] = True
        return output, mask
    _check_floating(input)
    mask = bernoulli_float(_like(input, D.bool_), 1.0 - p)
    output = _like(input, input.dtype)
    scale = _scale(input.dtype, p) if p < 1 else input.dtype.np.type(0)
    with np.errstate(all="ignore"):
        np.copyto(output._array, (input._array * mask._array) * scale, casting="unsafe")
    return output, mask


def _check_noise(input: Tensor, p: float) -> None:
    """``_noise``'s checks, drawing nothing."""
    _check_floating(input)
    bernoulli_meta(_like(input, input.dtype), 1.0 - p)


def _noise(input: Tensor, p: float) -> np.ndarray:
    _check_floating(input)
    mask = bernoulli_float(_like(input, input.dtype), 1.0 - p)
    return mask._array * _scale(input.dtype, p)


@dropout_op.register_meta
def _dropout_meta(input: Tensor, p: float, train: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not train or not numel(input._shape):
        return input
    if p != 1:
        _check_noise(input, p)
    return _like(input, input.dtype)


@dropout_op.register_kernel("cpu")
def _dropout(input: Tensor, p: float, train: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not train or not numel(input._shape):
        return input
    output = _like(input, input.dtype)
    if p == 1:
        with np.errstate(all="ignore"):
            np.copyto(output._array, input._array * input.dtype.np.type(0), casting="unsafe")
        return output
    with np.errstate(all="ignore"):
        np.copyto(output._array, input._array * _noise(input, p), casting="unsafe")
    return output


@dropout_op.register_decomposition
def _dropout_decomposition(input: Tensor, p: float, train: bool) -> Tensor:
    """``dropout`` through ``native_dropout``, whose mask its gradient keeps; the same draws as the
    kernel (one uniform per element whatever the mask's dtype), so results agree with and without grad."""
    _check_p(p)
    if p == 0 or not train or not numel(input._shape):
        return input
    if p == 1:
        return input * 0
    return native_dropout_op(input, p, train)[0]


@dropout_inplace.register_decomposition
def _dropout_inplace_decomposition(self: Tensor, p: float, train: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not train or not numel(self._shape):
        return self
    if p == 1:
        return self.mul_(0)
    return self.copy_(native_dropout_op(self, p, train)[0])


@dropout_inplace.register_meta
def _dropout_meta_(self: Tensor, p: float, train: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not train or not numel(self._shape):
        return self
    if p != 1:
        _check_noise(self, p)
    return self


@dropout_inplace.register_kernel("cpu")
def _dropout_(self: Tensor, p: float, train: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not train or not numel(self._shape):
        return self
    noise = self.dtype.np.type(0) if p == 1 else _noise(self, p)
    with np.errstate(all="ignore"):
        np.copyto(self._array, self._array * noise, casting="unsafe")
    self._storage.version += 1
    return self


def _probability(p) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating):
        raise TypeError(f"dropout(): argument 'p' must be float, not {type(p).__name__}")
    return float(p)


@public("dropout")
def dropout(input, p, train):
    """``ember.dropout(input, p, train)``: zero each element with probability ``p`` and scale the rest."""
    return dropout_op(input, _probability(p), bool(train))


@public("dropout_")
def dropout_(input, p, train):
    return dropout_inplace(input, _probability(p), bool(train))


@public("native_dropout")
def native_dropout(input, p, train):
    """``ember.native_dropout(input, p, train)``: ``(output, mask)``, mask True where kept."""
    return native_dropout_op(input, _probability(p), None if train is None else bool(train))
