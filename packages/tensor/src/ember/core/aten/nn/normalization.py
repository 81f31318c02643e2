"""Normalization layers' ops: layer norm, RMS norm, group norm and batch norm.

Each kernel (``native_layer_norm``, ``rms_norm``, ``native_group_norm``, ``_native_batch_norm_legit``)
views the input as rows to normalize (``(M, N)`` for layer/RMS norm, ``(N, G, rest)`` for group
norm, channels for batch norm), takes the mean and the biased variance in two passes over a float32
(half types) or own-dtype copy, then scales in place into the result buffer and rounds once. The
native ops also return the saved statistics (mean and 1/std), as PyTorch's do; the ``layer_norm``,
``group_norm`` and ``batch_norm`` front ends are decompositions into them. Batch norm in training
updates ``running_mean``/``running_var`` in place with ``momentum`` and the unbiased variance.
"""

from __future__ import annotations

import numpy as np

from ember.core import channel_rows
from ember.core import dtypes as D
from ember.core.api import public
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.pointwise import type_name, unsupported
from ember.core.quiet import restore, silence
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor, empty, from_array

native_layer_norm_op = define(
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) "
    "-> (Tensor, Tensor, Tensor)",
    ("core",),
)
layer_norm_op = define(
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, "
    "bool cudnn_enable=True) -> Tensor"
)
rms_norm_op = define(
    "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor"
)
native_group_norm_op = define(
    "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, "
    "float eps) -> (Tensor, Tensor, Tensor)",
    ("core",),
)
group_norm_op = define(
    "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, "
    "bool cudnn_enabled=True) -> Tensor"
)
batch_norm_legit_op = define(
    "_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, "
    "Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    ("core",),
)
batch_norm_no_stats_op = define(
    "_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, "
    "float eps) -> (Tensor, Tensor, Tensor)",
    ("core",),
)
# Evaluation mode: the running statistics are only read, so the op is functional (graphs need no
# copy of them and write nothing back).
batch_norm_no_training_op = define(
    "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
    "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    ("core",),
)
batch_norm_op = define(
    "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
    "bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor"
)


def _check_float(kernel: str, t: Tensor) -> None:
    if t.dtype.category != D.FLOATING:
        raise unsupported(kernel, t.dtype)


def _compute(t: Tensor) -> np.ndarray:
    array = t._array
    return array.astype(np.float32) if t.dtype.itemsize == 2 else array


def _param(t: Tensor | None, shape: tuple, dtype: np.dtype):
    """A weight or bias as an array broadcastable against the rows being normalized."""
    if t is None:
        return None
    return t._array.astype(dtype, copy=False).reshape(shape)


def _param_dtype(input: Tensor, *params) -> D.dtype:
    """PyTorch's CPU kernels accept float32 parameters with a half input ("mixed type"); the saved
    statistics then come out in float32. Any other mismatch is an error."""
    given = [p.dtype for p in params if p is not None]
    if all(d is input.dtype for d in given):
        return input.dtype
    if input.dtype.itemsize != 2:
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if any(d is not given[0] for d in given) or given[0] is not D.float32:
        odd = next(d for d in given if d is not given[0]) if any(d is not given[0] for d in given) else given[0]
        raise RuntimeError(f"expected scalar type {type_name(given[0])} but found {type_name(odd)}")
    return D.float32


def _moments(rows: np.ndarray, axis) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance along ``axis`` (kept), two passes for accuracy."""
    mean = np.mean(rows, axis=axis, keepdims=True)
    centered = rows - mean
    np.multiply(centered, centered, out=centered)
    return mean, np.mean(centered, axis=axis, keepdims=True)


# -- layer norm -----------------------------------------------------------------------------------------


def check_normalized(name: str, input: Tensor, normalized_shape, weight, bias) -> int:
    """The first normalized axis; RuntimeError as PyTorch's for shapes that do not fit."""
    normalized = tuple(normalized_shape)
    if not normalized:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
            "but got normalized_shape = []"
        )
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._shape) != normalized:
            raise RuntimeError(
                f"Expected {what} to be of same shape as normalized_shape, but got {what} of shape "
                f"{list(t._shape)} and normalized_shape = {list(normalized)}"
            )
    k = len(normalized)
    if input.ndim < k or tuple(input._shape[input.ndim - k :]) != normalized:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized)}, expected input with shape [*, "
            f"{', '.join(map(str, normalized))}], but got input of size{list(input._shape)}"
        )
    return input.ndim - k


def _layer_norm_plan(input: Tensor, normalized_shape, weight, bias) -> tuple:
    """The first normalized axis, the statistics' dtype and shape."""
    _check_float("LayerNormKernelImpl", input)
    axis = check_normalized("layer_norm", input, normalized_shape, weight, bias)
    stat_dtype = _param_dtype(input, weight, bias)
    return axis, stat_dtype, tuple(input._shape[:axis]) + (1,) * (input.ndim - axis)


@native_layer_norm_op.register_meta
def _native_layer_norm_meta(input: Tensor, normalized_shape, weight, bias, eps: float):
    _, stat_dtype, stat_shape = _layer_norm_plan(input, normalized_shape, weight, bias)
    out = empty(input._shape, input.dtype, input.device)
    return out, empty(stat_shape, stat_dtype, input.device), empty(stat_shape, stat_dtype, input.device)


@native_layer_norm_op.register_kernel("cpu")
def _native_layer_norm(input: Tensor, normalized_shape, weight, bias, eps: float):
    axis, stat_dtype, stat_shape = _layer_norm_plan(input, normalized_shape, weight, bias)
    m, n = numel(input._shape[:axis]), numel(input._shape[axis:])
    x = _compute(input).reshape(m, n)
    token = silence()
    try:
        out, mean, rstd = layer_norm_rows(x, _param(weight, (n,), x.dtype), _param(bias, (n,), x.dtype), eps)
    finally:
        restore(token)
    return (
        from_array(out.reshape(input._shape).astype(input.dtype.np, copy=False), input.dtype),
        from_array(mean.reshape(stat_shape), stat_dtype),
        from_array(rstd.reshape(stat_shape), stat_dtype),
    )


def layer_norm_rows(x: np.ndarray, weight, bias, eps: float):
    """Normalize each row of the 2-d ``x``; returns (result, mean, rstd) with fresh buffers."""
    m, n = x.shape
    if n == 0:
        return np.empty_like(x), np.zeros((m, 1), x.dtype), np.full((m, 1), np.nan, x.dtype)
    # Row sums and squared norms by einsum: several times faster than NumPy's row reductions.
    mean = np.einsum("ij->i", x).reshape(m, 1)
    mean /= n
    out = np.subtract(x, mean)
    var = np.einsum("ij,ij->i", out, out).reshape(m, 1)
    var /= n
    var += eps
    rstd = np.sqrt(var, out=var)
    np.divide(1, rstd, out=rstd)
    out *= rstd
    if weight is not None:
        out *= weight
    if bias is not None:
        out += bias
    return out, mean, rstd


@native_layer_norm_op.register_decomposition
def _native_layer_norm_decomposition(input, normalized_shape, weight, bias, eps):
    dims = list(range(input.ndim - len(normalized_shape), input.ndim))
    x = input.float() if input.dtype.itemsize == 2 else input
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, correction=0, keepdim=True)
    rstd = (var + eps).rsqrt()
    out = (x - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    stat_dtype = _param_dtype(input, weight, bias)
    return out.to(input.dtype), mean.to(stat_dtype), rstd.to(stat_dtype)


@layer_norm_op.register_decomposition
def _layer_norm_decomposition(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return native_layer_norm_op(input, normalized_shape, weight, bias, eps)[0]


@public("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """``ember.layer_norm``: normalize over the last ``len(normalized_shape)`` dimensions."""
    return native_layer_norm_op(input, _int_list("layer_norm", normalized_shape), weight, bias, float(eps))[0]


def _int_list(name: str, value) -> list:
    if isinstance(value, INT_LIKE) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list | tuple):
        for v in value:
            if isinstance(v, bool) or not isinstance(v, (*INT_LIKE, np.integer)):
                raise TypeError(f"{name}(): argument 'normalized_shape' must be tuple of ints")
        # Symbolic sizes (SymInt) stay symbolic: a traced graph keeps them as sizes, not constants.
        return [v if isinstance(v, INT_LIKE) else int(v) for v in value]
    raise TypeError(f"{name}(): argument 'normalized_shape' must be tuple of ints, not {type(value).__name__}")


# -- RMS norm -----------------------------------------------------------------------------------------


def _rms_norm_plan(input: Tensor, normalized_shape, weight) -> int:
    _check_float("rms_norm", input)
    return check_normalized("rms_norm", input, normalized_shape, weight, None)


@rms_norm_op.register_meta
def _rms_norm_meta(input: Tensor, normalized_shape, weight=None, eps=None):
    _rms_norm_plan(input, normalized_shape, weight)
    return empty(input._shape, input.dtype, input.device)


@rms_norm_op.register_kernel("cpu")
def _rms_norm(input: Tensor, normalized_shape, weight=None, eps=None):
    axis = _rms_norm_plan(input, normalized_shape, weight)
    m, n = numel(input._shape[:axis]), numel(input._shape[axis:])
    x = _compute(input).reshape(m, n)
    if eps is None:
        eps = float(np.finfo(x.dtype).eps)
    token = silence()
    try:
        out = np.empty_like(x)
        if n:
            ms = np.einsum("ij,ij->i", x, x).reshape(m, 1)
            ms /= n
            ms += eps
            np.sqrt(ms, out=ms)
            np.divide(x, ms, out=out)
            if weight is not None:
                out *= _param(weight, (n,), x.dtype)
    finally:
        restore(token)
    return from_array(out.reshape(input._shape).astype(input.dtype.np, copy=False), input.dtype)


@rms_norm_op.register_decomposition
def _rms_norm_decomposition(input, normalized_shape, weight=None, eps=None):
    dims = list(range(input.ndim - len(normalized_shape), input.ndim))
    x = input.float() if input.dtype.itemsize == 2 else input
    if eps is None:
        eps = float(np.finfo(x.dtype.np).eps)
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out.to(input.dtype)


@public("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``ember.rms_norm``: ``x / sqrt(mean(x**2) + eps)`` over the last dimensions, times ``weight``."""
    return rms_norm_op(input, _int_list("rms_norm", normalized_shape), weight, None if eps is None else float(eps))


# -- group norm ---------------------------------------------------------------------------------------


def _group_norm_plan(input: Tensor, weight, bias, N: int, C: int, HxW: int, group: int) -> D.dtype:
    """The checks; the statistics' dtype."""
    _check_float("GroupNormKernelImpl", input)
    if group <= 0 or C % group:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{list(input._shape)} and num_groups={group}"
        )
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t._shape[0] != C):
            raise RuntimeError(
                f"Expected {what} to be a vector of size equal to the number of channels in input, but got "
                f"{what} of shape {list(t._shape)} and input of shape {list(input._shape)}"
            )
    if N * C * HxW != input.numel():
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, got {input.numel()}")
    return _param_dtype(input, weight, bias)


@native_group_norm_op.register_meta
def _native_group_norm_meta(input: Tensor, weight, bias, N: int, C: int, HxW: int, group: int, eps: float):
    stat_dtype = _group_norm_plan(input, weight, bias, N, C, HxW, group)
    return (
        empty(input._shape, input.dtype, input.device),
        empty((N, group), stat_dtype, input.device),
        empty((N, group), stat_dtype, input.device),
    )


@native_group_norm_op.register_kernel("cpu")
def _native_group_norm(input: Tensor, weight, bias, N: int, C: int, HxW: int, group: int, eps: float):
    stat_dtype = _group_norm_plan(input, weight, bias, N, C, HxW, group)
    x = _compute(input).reshape(N, group, (C // group) * HxW)
    token = silence()
    try:
        if x.shape[2]:
            mean, var = _moments(x, 2)
        else:
            mean = var = np.full((N, group, 1), np.nan, x.dtype)
        rstd = 1 / np.sqrt(var + eps)
        out = np.subtract(x, mean).reshape(N, C, HxW)
        out *= np.repeat(rstd, C // group, axis=1)
        if weight is not None:
            out *= _param(weight, (C, 1), x.dtype)
        if bias is not None:
            out += _param(bias, (C, 1), x.dtype)
    finally:
        restore(token)
    return (
        from_array(out.reshape(input._shape).astype(input.dtype.np, copy=False), input.dtype),
        from_array(mean.reshape(N, group), stat_dtype),
        from_array(rstd.reshape(N, group), stat_dtype),
    )


@group_norm_op.register_decomposition
def _group_norm_decomposition(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    n, c = input._shape[0], input._shape[1]
    hxw = numel(input._shape[2:])
    return native_group_norm_op(input, weight, bias, n, c, hxw, num_groups, eps)[0]


@public("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """``ember.group_norm``: normalize each of ``num_groups`` groups of channels per sample."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    return group_norm_op(input, num_groups, weight, bias, float(eps), cudnn_enabled)


# -- batch norm -----------------------------------------------------------------------------------------


def _batch_norm_plan(input: Tensor, weight, bias, running_mean, running_var, training: bool) -> tuple:
    """The checks; the channel count, the statistics' dtype and the saved statistics' shape."""
    _check_float("batch_norm_cpu", input)
    if input.ndim < 2:
        raise RuntimeError(f"batch_norm: expected 2D or more input (got {input.ndim}D input)")
    c = input._shape[1]
    for what, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{what} should contain {c} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    stat_dtype = _param_dtype(input, weight, bias, running_mean, running_var)
    return c, stat_dtype, (c,) if training else (0,)


def _batch_norm_meta(input: Tensor, weight, bias, running_mean, running_var, training: bool) -> tuple:
    _, stat_dtype, saved = _batch_norm_plan(input, weight, bias, running_mean, running_var, training)
    out = empty(input._shape, input.dtype, input.device)
    return out, empty(saved, stat_dtype, input.device), empty(saved, stat_dtype, input.device)


def _batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool, momentum: float, eps: float):
    c, stat_dtype, _ = _batch_norm_plan(input, weight, bias, running_mean, running_var, training)
    x = _compute(input)
    axes = (0, *range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    token = silence()
    centered = None  # x - mean, where the statistics already made it
    try:
        if training:
            count = numel(input._shape) // c if c else 0
            if count and x.flags.c_contiguous:
                mean, var, centered = _channel_moments(x)
            elif count:
                mean, var = _moments(x, axes)
            else:
                mean = var = np.full(shape, np.nan, x.dtype)
            invstd = 1 / np.sqrt(var + eps)
            if running_mean is not None:
                _blend(running_mean, mean, momentum)
            if running_var is not None:
                _blend(running_var, var * (count / (count - 1)) if count > 1 else var * np.inf, momentum)
        else:
            mean = _param(running_mean, shape, x.dtype)
            invstd = 1 / np.sqrt(_param(running_var, shape, x.dtype) + eps)
        # (x - mean) first: folding the mean into a shift (x * scale + shift) would lose the digits
        # that cancel where the variance is tiny next to the mean.
        scale = invstd if weight is None else invstd * _param(weight, shape, x.dtype)
        out = _normalized(x, mean, scale, _param(bias, shape, x.dtype), centered)
    finally:
        restore(token)
    result = from_array(out.astype(input.dtype.np, copy=False).reshape(input._shape), input.dtype)
    if not training:
        return (
            result,
            from_array(np.empty(0, stat_dtype.np), stat_dtype),
            from_array(np.empty(0, stat_dtype.np), stat_dtype),
        )
    return (
        result,
        from_array(mean.reshape(c).astype(stat_dtype.np), stat_dtype),
        from_array(invstd.reshape(c).astype(stat_dtype.np), stat_dtype),
    )


def _normalized(x: np.ndarray, mean, scale, shift, centered) -> np.ndarray:
    """``(x - mean) * scale + shift`` for per-channel operands shaped (1, C, 1, ...), ``shift``
    None or ``centered`` (x - mean, a temporary) already made; each sample's row meets the
    operands as contiguous blocks where ``x`` is laid out for it."""
    if channel_rows.fits(x):
        mean, scale = channel_rows.block(mean, x.shape), channel_rows.block(scale, x.shape)
        shift = None if shift is None else channel_rows.block(shift, x.shape)
        x = channel_rows.rows(x)
        centered = None if centered is None else channel_rows.rows(centered)
    out = np.subtract(x, mean) if centered is None else centered
    out *= scale
    if shift is not None:
        out += shift
    return out


def _channel_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_moments`` over every dim but dim 1 of a C-contiguous array, shaped (1, C, 1, ...), and
    ``x - mean`` (a new array, for the caller to scale in place): the sums and the squared
    deviations are dot products per (sample, channel) row (by ones, and by itself), which spares a
    full-size pass and strided reductions."""
    n, c = x.shape[:2]
    shape = (1, c) + (1,) * (x.ndim - 2)
    rows = x.reshape(n, c, -1)
    count = n * rows.shape[2]
    mean = channel_rows.sums(x) / x.dtype.type(count)
    if channel_rows.fits(x):
        centered = np.subtract(channel_rows.rows(x), channel_rows.block(mean, x.shape)).reshape(n, c, 1, -1)
    else:
        centered = (rows - mean[:, None]).reshape(n, c, 1, -1)
    squares = np.matmul(centered, centered.reshape(n, c, -1, 1)).reshape(n, c)
    variance = (squares.sum(axis=0) / x.dtype.type(count)).reshape(shape)
    return mean.reshape(shape), variance, centered.reshape(x.shape)


def _blend(running: Tensor, batch: np.ndarray, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch``, in place, in the stats' own dtype.

    The version counter stays as it is, as PyTorch's kernel leaves it: autograd saves the running
    statistics (eval mode's gradient reads them), and a second forward through the same layer
    before the first one's backward (a siamese network) must not read as a modification."""
    target = running._array
    stats = target.astype(np.float64) if target.dtype.itemsize == 2 else target
    value = (1 - momentum) * stats + momentum * batch.reshape(target.shape).astype(stats.dtype)
    np.copyto(target, value, casting="unsafe")


@batch_norm_legit_op.register_kernel("cpu")
def _batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps):
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


@batch_norm_no_stats_op.register_kernel("cpu")
def _batch_norm_no_stats(input, weight, bias, training, momentum, eps):
    return _batch_norm(input, weight, bias, None, None, training, momentum, eps)


@batch_norm_no_training_op.register_kernel("cpu")
def _batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    return _batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps)


@batch_norm_legit_op.register_meta
def _batch_norm_legit_meta(input, weight, bias, running_mean, running_var, training, momentum, eps):
    return _batch_norm_meta(input, weight, bias, running_mean, running_var, training)


@batch_norm_no_stats_op.register_meta
def _batch_norm_no_stats_meta(input, weight, bias, training, momentum, eps):
    return _batch_norm_meta(input, weight, bias, None, None, training)


@batch_norm_no_training_op.register_meta
def _batch_norm_no_training_meta(input, weight, bias, running_mean, running_var, momentum, eps):
    return _batch_norm_meta(input, weight, bias, running_mean, running_var, False)


@batch_norm_op.register_decomposition
def _batch_norm_decomposition(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    if numel(input._shape) == 0:
        # PyTorch runs no kernel for an empty input; the copy keeps weight and bias in the graph.
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    if running_mean is None or running_var is None:
        if not training:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        return batch_norm_no_stats_op(input, weight, bias, training, momentum, eps)[0]
    if not training:
        return batch_norm_no_training_op(input, weight, bias, running_mean, running_var, momentum, eps)[0]
    return batch_norm_legit_op(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


@public("batch_norm")
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """``ember.batch_norm``: normalize over every dimension but the channels (dim 1)."""
    if not isinstance(momentum, int | float) or isinstance(momentum, bool):
        raise TypeError(f"batch_norm(): argument 'momentum' must be float, not {type(momentum).__name__}")
    return batch_norm_op(
        input, weight, bias, running_mean, running_var, training, float(momentum), float(eps), cudnn_enabled
    )


@public("_native_batch_norm_legit_no_training")
def _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    """``ember._native_batch_norm_legit_no_training``: batch norm in evaluation mode, (result, and two
    empty statistics); the running statistics are read, never written."""
    return batch_norm_no_training_op(input, weight, bias, running_mean, running_var, float(momentum), float(eps))


@public("native_layer_norm")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``ember.native_layer_norm``: (result, mean, rstd)."""
    return native_layer_norm_op(input, _int_list("native_layer_norm", normalized_shape), weight, bias, float(eps))


@public("native_group_norm")
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``ember.native_group_norm``: (result, mean, rstd), each statistic of shape (N, group)."""
    return native_group_norm_op(input, weight, bias, N, C, HxW, group, float(eps))


@public("_native_batch_norm_legit")
def _native_batch_norm_legit(input, weight, bias, *args):
    """``ember._native_batch_norm_legit``: (result, saved mean, saved 1/std), from
    ``(running_mean, running_var, training, momentum, eps)`` or, without running statistics, from
    ``(training, momentum, eps)``."""
    if len(args) == 3:
        training, momentum, eps = args
        return batch_norm_no_stats_op(input, weight, bias, training, float(momentum), float(eps))
    running_mean, running_var, training, momentum, eps = args
    return batch_norm_legit_op(input, weight, bias, running_mean, running_var, training, float(momentum), float(eps))
