"""Elementwise losses: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``binary_cross_entropy``,
``binary_cross_entropy_with_logits`` and ``kl_div``, each with ``reduction`` (0 none, 1 mean, 2 sum).

Each kernel broadcasts its operands, computes the elementwise loss in the compute dtype (float32 for
the half types), then reduces. With ``reduction=0`` the result is laid out as the pointwise ops
PyTorch builds it from would lay it out (the order of operands there decides ties), so meta and CPU
strides agree with PyTorch's. ``binary_cross_entropy`` clamps each log at -100, as PyTorch does, so
that a probability of exactly 0 or 1 gives a finite loss.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.dispatch import define
from ember.core.layout import broadcast_shapes, contiguous_strides, dense_strides_like, pointwise_strides
from ember.core.pointwise import type_name
from ember.core.promotion import result_type
from ember.core.quiet import restore, silence
from ember.core.tensor import Tensor, empty, from_array

mse_loss_op = define("mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor", ("core",))
l1_loss_op = define("l1_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor")
smooth_l1_loss_op = define(
    "smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float beta=1.0) -> Tensor", ("core",)
)
bce_op = define(
    "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor", ("core",)
)
bce_logits_op = define(
    "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, "
    "int reduction=Mean) -> Tensor"
)
kl_div_op = define("kl_div(Tensor self, Tensor target, int reduction=Mean, *, bool log_target=False) -> Tensor")

NONE, MEAN, SUM = 0, 1, 2


def _check_reduction(reduction: int) -> None:
    if reduction not in (NONE, MEAN, SUM):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _floats_only(kernel: str, dtype: D.dtype) -> None:
    if dtype.category != D.FLOATING:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{type_name(dtype)}'")


def _arrays(dtype: D.dtype, *tensors):
    compute = np.float32 if dtype.itemsize == 2 else dtype.np
    return [None if t is None else t._array.astype(compute, copy=False) for t in tensors]


def _empty_result(reduction: int, dtype: D.dtype, shape: tuple, strides: tuple, device) -> Tensor:
    """The meta result: a scalar when reduced, else laid out as ``_layout`` says."""
    if reduction != NONE:
        return empty((), dtype, device)
    return empty(shape, dtype, device, strides)


def _result(loss, reduction: int, dtype: D.dtype, shape: tuple, strides: tuple, device) -> Tensor:
    """The reduced (or laid-out) result of the computed elementwise ``loss``."""
    if reduction != NONE:
        total = np.sum(loss, dtype=loss.dtype)
        if reduction == MEAN:
            total = total / loss.size if loss.size else np.array(np.nan, loss.dtype)
        return from_array(np.asarray(total).astype(dtype.np), dtype)
    loss = np.broadcast_to(loss, shape)
    if strides == contiguous_strides(shape):
        return from_array(loss.astype(dtype.np), dtype)
    out = empty(shape, dtype, device, strides)
    np.copyto(out._array, loss, casting="unsafe")
    return out


def _layout(*tensors) -> tuple[tuple, tuple]:
    tensors = [t for t in tensors if t is not None]
    shape = broadcast_shapes(*(t._shape for t in tensors))
    return shape, pointwise_strides(shape, [(t._shape, t._stride) for t in tensors])


def _run(compute):
    token = silence()
    try:
        return compute()
    finally:
        restore(token)


# -- mse, l1, smooth l1 -------------------------------------------------------------------------------------


def _difference_plan(self: Tensor, target: Tensor, reduction: int, kernel: str, ints_ok: bool) -> tuple:
    """The compute dtype, the result dtype and the unreduced shape and strides."""
    _check_reduction(reduction)
    dtype = result_type(self, target)
    if self.dtype is D.bool_ and target.dtype is D.bool_:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if not ints_ok:
        _floats_only(kernel, dtype)
    elif dtype.category < D.FLOATING and reduction == MEAN:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {type_name(dtype)}"
        )
    result_dtype = dtype.to_real() if dtype.category == D.COMPLEX else dtype
    shape, strides = _layout(self, target)
    return dtype, result_dtype, shape, strides


def _difference_loss(kernel: str, elementwise, ints_ok: bool = False):
    def loss(self: Tensor, target: Tensor, reduction: int = MEAN, *extra) -> Tensor:
        dtype, result_dtype, shape, strides = _difference_plan(self, target, reduction, kernel, ints_ok)
        if dtype.category == D.COMPLEX:
            x, t = self._array.astype(dtype.np), target._array.astype(dtype.np)
        else:
            x, t = _arrays(dtype, self, target)
        values = _run(lambda: elementwise(x, t, *extra))
        return _result(values, reduction, result_dtype, shape, strides, self.device)

    def meta(self: Tensor, target: Tensor, reduction: int = MEAN, *extra) -> Tensor:
        _, result_dtype, shape, strides = _difference_plan(self, target, reduction, kernel, ints_ok)
        return _empty_result(reduction, result_dtype, shape, strides, self.device)

    return loss, meta


def _squared(x, t):
    d = np.subtract(x, t)
    d *= d  # in place for arrays; 0-dim operands give NumPy scalars, which rebind
    return d


def _absolute(x, t):
    return np.abs(np.subtract(x, t))


def _smooth(x, t, beta):
    d = np.abs(np.subtract(x, t))
    if beta == 0:
        return d
    return np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


_mse, _mse_meta = _difference_loss("mse_cpu", _squared)
_l1, _l1_meta = _difference_loss("l1_loss", _absolute, ints_ok=True)
_smooth_l1_inner, _smooth_l1_inner_meta = _difference_loss("smooth_l1_cpu", _smooth)


def _check_beta(beta: float) -> None:
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")


def _smooth_l1(self: Tensor, target: Tensor, reduction: int = MEAN, beta: float = 1.0) -> Tensor:
    _check_beta(beta)
    return _smooth_l1_inner(self, target, reduction, beta)


def _smooth_l1_meta(self: Tensor, target: Tensor, reduction: int = MEAN, beta: float = 1.0) -> Tensor:
    _check_beta(beta)
    return _smooth_l1_inner_meta(self, target, reduction, beta)


for _op, _fn, _meta in (
    (mse_loss_op, _mse, _mse_meta),
    (l1_loss_op, _l1, _l1_meta),
    (smooth_l1_loss_op, _smooth_l1, _smooth_l1_meta),
):
    _op.register_kernel("cpu")(_fn)
    _op.register_meta(_meta)


def _reduce_decomposition(loss, reduction: int):
    return loss if reduction == NONE else loss.sum() if reduction == SUM else loss.mean()


@mse_loss_op.register_decomposition
def _mse_decomposition(self, target, reduction=MEAN):
    return _reduce_decomposition((self - target) ** 2, reduction)


@l1_loss_op.register_decomposition
def _l1_decomposition(self, target, reduction=MEAN):
    return _reduce_decomposition((self - target).abs(), reduction)


# -- binary cross entropy -----------------------------------------------------------------------------------


def _bce_plan(self: Tensor, target: Tensor, weight, reduction: int) -> tuple:
    _check_reduction(reduction)
    _floats_only("binary_cross_entropy", self.dtype)
    if target.dtype is not self.dtype:
        raise RuntimeError(f"Found dtype {type_name(target.dtype)} but expected {type_name(self.dtype)}")
    if tuple(target._shape) != tuple(self._shape):
        raise RuntimeError(
            f"The size of tensor a ({list(self._shape)}) must match the size of tensor b ({list(target._shape)})"
        )
    shape = tuple(self._shape)
    if weight is not None:
        broadcast_shapes(shape, weight._shape)
    return shape, dense_strides_like(shape, self._stride)


@bce_op.register_meta
def _bce_meta(self: Tensor, target: Tensor, weight=None, reduction: int = MEAN) -> Tensor:
    shape, strides = _bce_plan(self, target, weight, reduction)
    return _empty_result(reduction, self.dtype, shape, strides, self.device)


@bce_op.register_kernel("cpu")
def _bce(self: Tensor, target: Tensor, weight=None, reduction: int = MEAN) -> Tensor:
    shape, strides = _bce_plan(self, target, weight, reduction)
    x, t = _arrays(self.dtype, self, target)
    if x.size and not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")

    def compute():
        log_x = np.maximum(np.log(x), -100)
        log_1mx = np.maximum(np.log1p(-x), -100)
        loss = -(t * log_x + (1 - t) * log_1mx)
        if weight is not None:
            loss *= _arrays(self.dtype, weight)[0]
        return loss

    return _result(_run(compute), reduction, self.dtype, shape, strides, self.device)


def _bce_logits_plan(self: Tensor, target: Tensor, weight, pos_weight, reduction: int) -> tuple:
    _check_reduction(reduction)
    dtype = result_type(*(t for t in (self, target, weight, pos_weight) if t is not None))
    _floats_only("log_sigmoid_cpu", self.dtype)
    _floats_only("log_sigmoid_cpu", dtype)
    # The loss is built from (1 - target) first: the target's layout decides ties.
    return (dtype, *_layout(target, self, pos_weight, weight))


@bce_logits_op.register_meta
def _bce_logits_meta(self: Tensor, target: Tensor, weight=None, pos_weight=None, reduction: int = MEAN) -> Tensor:
    dtype, shape, strides = _bce_logits_plan(self, target, weight, pos_weight, reduction)
    return _empty_result(reduction, dtype, shape, strides, self.device)


@bce_logits_op.register_kernel("cpu")
def _bce_logits(self: Tensor, target: Tensor, weight=None, pos_weight=None, reduction: int = MEAN) -> Tensor:
    dtype, shape, strides = _bce_logits_plan(self, target, weight, pos_weight, reduction)
    x, t, w, pw = _arrays(dtype, self, target, weight, pos_weight)

    def compute():
        # -log(sigmoid(x)) = log1p(exp(-|x|)) + max(-x, 0), stable for both signs.
        softplus = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)
        scale = 1 if pw is None else (pw - 1) * t + 1
        loss = (1 - t) * x + scale * softplus
        return loss if w is None else loss * w

    return _result(_run(compute), reduction, dtype, shape, strides, self.device)


# -- KL divergence ------------------------------------------------------------------------------------------


def _kl_div_plan(self: Tensor, target: Tensor, reduction: int) -> tuple:
    _check_reduction(reduction)
    if self.dtype.category < D.FLOATING or target.dtype.category < D.FLOATING:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    return (result_type(self, target), *_layout(target, self))


@kl_div_op.register_meta
def _kl_div_meta(self: Tensor, target: Tensor, reduction: int = MEAN, *, log_target: bool = False) -> Tensor:
    dtype, shape, strides = _kl_div_plan(self, target, reduction)
    return _empty_result(reduction, dtype, shape, strides, self.device)


@kl_div_op.register_kernel("cpu")
def _kl_div(self: Tensor, target: Tensor, reduction: int = MEAN, *, log_target: bool = False) -> Tensor:
    dtype, shape, strides = _kl_div_plan(self, target, reduction)
    x, t = _arrays(dtype, self, target)

    def compute():
        if log_target:
            return np.exp(t) * (t - x)
        # xlogy: 0 where the target is 0 (NaN stays NaN).
        tlogt = np.where(t == 0, 0, t * np.log(np.where(t == 0, 1, t)))
        return tlogt - t * x

    return _result(_run(compute), reduction, dtype, shape, strides, self.device)


@public("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=NONE):
    """``ember.binary_cross_entropy_with_logits``: the op with the enum ``reduction``. Its default is 0
    (none), not the schema's Mean: PyTorch's binding of ``torch.binary_cross_entropy_with_logits``
    reads the enum default that way, and so do we."""
    return bce_logits_op(input, target, weight, pos_weight, reduction)


@public("kl_div")
def kl_div(input, target, reduction=NONE, *, log_target=False):
    """``ember.kl_div``: the op with the enum ``reduction`` (default 0, none, as ``torch.kl_div``'s binding)."""
    return kl_div_op(input, target, reduction, log_target=log_target)
