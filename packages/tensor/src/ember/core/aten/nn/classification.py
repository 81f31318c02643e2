"""Classification losses: ``nll_loss`` (over log-probabilities) and ``cross_entropy_loss`` (over logits),
for inputs ``(C,)``, ``(N, C)`` and ``(N, C, d1, ...)``, with class-weights, ``ignore_index``,
``label_smoothing`` and ``reduction`` (0 none, 1 mean, 2 sum, PyTorch's enum).

The cross-entropy kernel with class indices never materializes the log-softmax: each row's loss is
``logsumexp(x) - x[target]`` (one exp pass, one gather by NumPy fancy indexing); label smoothing
adds ``sum_c w_c * (logsumexp - x_c)``. Targets that are class probabilities (same shape as the
input, floating) take the full log-softmax. Mean reduction divides by the summed weights of the
targets that count, as PyTorch does (NaN when none count). Half types compute in float32.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.nn.softmax import row_sums, softmax_into, unshifted
from ember.core.dispatch import define
from ember.core.pointwise import type_name
from ember.core.promotion import result_type
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

nll_loss_forward_op = define(
    "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) "
    "-> (Tensor output, Tensor total_weight)",
    ("core",),
)
nll_loss_nd_op = define(
    "nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor"
)
nll_loss_op = define(
    "nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor"
)
cross_entropy_op = define(
    "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
    "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor"
)

NONE, MEAN, SUM = 0, 1, 2


def _compute_dtype(d: D.dtype) -> np.dtype:
    return np.dtype(np.float32) if d.itemsize == 2 else d.np


def _check_reduction(reduction: int) -> None:
    if reduction not in (NONE, MEAN, SUM):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_indices_target(self: Tensor, target: Tensor, weight: Tensor | None) -> int:
    """PyTorch's checks of an index target; returns the number of classes."""
    if self.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {self.ndim})")
    if target.dtype is not D.int64 and target.dtype is not D.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {type_name(target.dtype)}")
    if self.ndim != 1 and (target.ndim == 0 or self._shape[0] != target._shape[0]):
        got = target._shape[0] if target.ndim else 0
        raise ValueError(f"Expected input batch_size ({self._shape[0]}) to match target batch_size ({got}).")
    expected = () if self.ndim == 1 else (self._shape[0], *self._shape[2:])
    if tuple(target._shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target._shape)}")
    classes = self._shape[0 if self.ndim == 1 else 1]
    if weight is not None:
        if weight.numel() != classes:
            raise RuntimeError(
                f"weight tensor should be defined either for all {classes} classes or no classes but got weight "
                f"tensor of shape: {list(weight._shape)}"
            )
        if weight.dtype is not self.dtype:
            raise RuntimeError(f"expected scalar type {type_name(self.dtype)} but found {type_name(weight.dtype)}")
    return classes


def _pick(self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int):
    """The input as rows of classes, the safe targets, the per-row weights (0 where ignored)."""
    x = self._array
    if x.dtype.itemsize == 2:
        x = x.astype(np.float32)
    if self.ndim > 2:
        x = np.moveaxis(x, 1, -1)
    # Rows of classes, one per target (a 1-d input is one row): results are reshaped by the caller.
    classes = x.shape[-1]
    x = x.reshape(-1, classes)
    t = target._array.astype(np.int64, copy=False).reshape(-1)
    ignored = t == ignore_index
    if t.size and (t.min() < 0 or t.max() >= classes):  # cheap test first; the exact one only on failure
        bad = (~ignored) & ((t < 0) | (t >= classes))
        if bad.any():
            raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    safe = np.where(ignored, 0, t)
    if weight is None:
        w = (~ignored).astype(x.dtype)
    else:
        w = weight._array.astype(x.dtype).reshape(-1)[safe]
        w[ignored] = 0
    return x, safe, w, ignored


def _reduce(loss: np.ndarray, w: np.ndarray, reduction: int) -> np.ndarray:
    if reduction == NONE:
        return loss
    total = np.add.reduce(loss, axis=None)
    return total if reduction == SUM else total / np.add.reduce(w, axis=None)


def _loss_shape(target: Tensor, reduction: int) -> tuple:
    return tuple(target._shape) if reduction == NONE else ()


def _nll_loss_plan(self: Tensor, target: Tensor, weight, reduction: int) -> tuple:
    _check_reduction(reduction)
    _check_indices_target(self, target, weight)
    return _loss_shape(target, reduction)


@nll_loss_forward_op.register_meta
def _nll_loss_forward_meta(self: Tensor, target: Tensor, weight, reduction: int, ignore_index: int):
    shape = _nll_loss_plan(self, target, weight, reduction)
    return empty(shape, self.dtype, self.device), empty((), self.dtype, self.device)


@nll_loss_forward_op.register_kernel("cpu")
def _nll_loss_forward(self: Tensor, target: Tensor, weight, reduction: int, ignore_index: int):
    shape = _nll_loss_plan(self, target, weight, reduction)
    token = silence()
    try:
        x, safe, w, _ = _pick(self, target, weight, ignore_index)
        loss = -(x[np.arange(x.shape[0]), safe] * w)
        result = _reduce(loss, w, reduction)
        total = np.zeros((), x.dtype) if reduction == NONE else np.sum(w, dtype=x.dtype)
    finally:
        restore(token)
    return (
        from_array(np.asarray(result).astype(self.dtype.np).reshape(shape), self.dtype),
        from_array(np.asarray(total).astype(self.dtype.np), self.dtype),
    )


def _nll_loss_nd(self, target, weight=None, reduction=MEAN, ignore_index=-100):
    return nll_loss_forward_op(self, target, weight, reduction, ignore_index)[0]


nll_loss_nd_op.register_decomposition(_nll_loss_nd)
nll_loss_op.register_decomposition(_nll_loss_nd)


# -- cross entropy ------------------------------------------------------------------------------------------


def _check_smoothing(label_smoothing: float) -> None:
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def _is_probabilities(self: Tensor, target: Tensor) -> bool:
    if tuple(self._shape) != tuple(target._shape):
        return False
    if target.dtype.category != D.FLOATING:
        raise RuntimeError(
            f"Expected floating point type for target with class probabilities, got {type_name(target.dtype)}"
        )
    return True


def _check_float(self: Tensor) -> None:
    if self.dtype.category != D.FLOATING:
        raise NotImplementedError(f"\"log_softmax_lastdim_kernel_impl\" not implemented for '{type_name(self.dtype)}'")


def _cross_entropy_plan(self: Tensor, target: Tensor, weight, reduction: int, label_smoothing: float) -> tuple:
    """Whether the target holds class probabilities, the result's shape and dtype."""
    _check_reduction(reduction)
    _check_smoothing(label_smoothing)
    if _is_probabilities(self, target):
        return (True, *_probabilities_plan(self, target, weight, reduction))
    _check_indices_target(self, target, weight)
    _check_float(self)
    return False, _loss_shape(target, reduction), self.dtype


@cross_entropy_op.register_meta
def _cross_entropy_meta(
    self: Tensor, target: Tensor, weight=None, reduction=MEAN, ignore_index=-100, label_smoothing=0.0
):
    _, shape, dtype = _cross_entropy_plan(self, target, weight, reduction, label_smoothing)
    return empty(shape, dtype, self.device)


@cross_entropy_op.register_kernel("cpu")
def _cross_entropy(self: Tensor, target: Tensor, weight=None, reduction=MEAN, ignore_index=-100, label_smoothing=0.0):
    probabilities, shape, _ = _cross_entropy_plan(self, target, weight, reduction, label_smoothing)
    if probabilities:
        return _cross_entropy_probabilities(self, target, weight, reduction, label_smoothing, shape)
    token = silence()
    try:
        x, safe, w, ignored = _pick(self, target, weight, ignore_index)
        lse = _logsumexp_last(x)
        loss = np.subtract(lse, x[np.arange(x.shape[0]), safe])
        loss *= w
        result = _reduce(loss, w, reduction)
        if label_smoothing > 0:
            result = _smoothed(result, x, lse, weight, w, ignored, reduction, label_smoothing)
    finally:
        restore(token)
    return from_array(np.asarray(result).astype(self.dtype.np).reshape(shape), self.dtype)


def _logsumexp_last(x: np.ndarray) -> np.ndarray:
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], -np.inf, x.dtype)
    if unshifted(x):
        total = row_sums(np.exp(x), 1)
        return np.log(total, out=total).reshape(-1)
    # Shifted by the row maximum even where it is infinite: inf - inf is NaN there, as in PyTorch.
    m = np.maximum.reduce(x, axis=-1, keepdims=True)
    e = np.subtract(x, m)
    np.exp(e, out=e)
    total = row_sums(e, 1)
    np.log(total, out=total)
    total += m
    return total.reshape(-1)


def _smoothed(nll, x, lse, weight, w, ignored, reduction, label_smoothing):
    """PyTorch's label smoothing for index targets: a mix of the NLL and the (weighted) mean of
    every class's negative log-probability, with its own normalization under ``mean``."""
    classes = x.shape[-1]
    if weight is None:
        smooth = classes * lse - np.sum(x, axis=-1)
    else:
        cw = weight._array.astype(x.dtype).reshape(-1)
        smooth = np.sum(cw) * lse - x @ cw
    smooth[ignored] = 0
    if reduction == NONE:
        extra = smooth
    elif reduction == SUM:
        extra = np.sum(smooth)
    else:
        extra = np.sum(smooth) / np.sum(w)
    return (1 - label_smoothing) * nll + extra * (label_smoothing / classes)


def _probabilities_plan(self: Tensor, target: Tensor, weight, reduction: int) -> tuple:
    _check_float(self)
    result_dtype = result_type(self, target)
    class_axis = 0 if self.ndim == 1 else 1
    classes = self._shape[class_axis] if self.ndim else 1
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes but got weight "
            f"tensor of shape: {list(weight._shape)}"
        )
    shape = tuple(s for i, s in enumerate(self._shape) if i != class_axis) if reduction == NONE else ()
    if self.ndim == 0:
        raise RuntimeError("cross_entropy: a 0-dim input has no class dimension")
    return shape, result_dtype


def _cross_entropy_probabilities(self: Tensor, target: Tensor, weight, reduction: int, label_smoothing: float, shape):
    result_dtype = result_type(self, target)
    class_axis = 0 if self.ndim == 1 else 1
    classes = self._shape[class_axis]
    token = silence()
    try:
        x = self._array.astype(_compute_dtype(self.dtype))
        logp = softmax_into(x, class_axis, np.empty(x.shape, x.dtype), log=True)
        t = target._array.astype(_compute_dtype(result_dtype))
        if label_smoothing > 0:
            t = t * (1 - label_smoothing) + label_smoothing / classes
        product = logp * t
        if weight is not None:
            view = [1] * self.ndim
            view[class_axis] = classes
            product = product * weight._array.astype(product.dtype).reshape(view)
        loss = -np.sum(product, axis=class_axis)
        if reduction == SUM:
            loss = np.sum(loss)
        elif reduction == MEAN:
            loss = np.sum(loss) / (self.numel() // classes if classes else 0)
    finally:
        restore(token)
    return from_array(np.asarray(loss).astype(result_dtype.np).reshape(shape), result_dtype)


@cross_entropy_op.register_decomposition
def _cross_entropy_decomposition(self, target, weight=None, reduction=MEAN, ignore_index=-100, label_smoothing=0.0):
    class_axis = 0 if self.ndim == 1 else 1
    logp = self.log_softmax(class_axis)
    if self.shape == target.shape and target.dtype.category == D.FLOATING:
        classes = self.shape[class_axis]
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        product = logp * target
        if weight is not None:
            view = [1] * self.ndim
            view[class_axis] = classes
            product = product * weight.view(view)
        loss = -product.sum(class_axis)
        if reduction == SUM:
            return loss.sum()
        if reduction == MEAN:
            return loss.sum() / (self.numel() // classes)
        return loss
    nll, total_weight = nll_loss_forward_op(logp, target, weight, reduction, ignore_index)
    if label_smoothing == 0:
        return nll
    if weight is not None:
        view = [1] * self.ndim
        view[class_axis] = self.shape[class_axis]
        smooth = -(logp * weight.view(view)).sum(class_axis)
    else:
        smooth = -logp.sum(class_axis)
    counted = target != ignore_index
    # Zeroed by selection, not by a product: with every target ignored, mean's division by zero sends
    # an infinite gradient back, which a product would turn into NaN (PyTorch masks it).
    smooth = smooth.where(counted, 0.0)
    if reduction == SUM:
        smooth = smooth.sum()
    elif reduction == MEAN:
        smooth = smooth.sum() / (total_weight if weight is not None else counted.sum())
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / self.shape[class_axis])
