"""Convolutions: the ``convolution`` op (1-D and 2-D, plain and transposed, grouped) and the composites
``conv1d``, ``conv2d`` (with ``padding="same"``/``"valid"``) and ``conv_transpose2d``.

A 1-D convolution runs as a 2-D one of height 1. A float32 convolution of stride 1 runs the compiled
direct kernel (``conv_direct``). Otherwise the forward kernel turns the convolution into few, large
2-D GEMMs over the whole batch: with stride 1 on the zero-padded input's flattened grid, where
each kernel tap is a shifted slice of one buffer (``conv_grid``); with other strides by gathering
the windows with ``as_strided`` (im2col) into one GEMM per group. The bias rides in the GEMM as a
row of ones. A transposed convolution is one GEMM per group into columns and a scatter-add of each
kernel tap into the output (col2im); with stride 1 it is rather run as the plain convolution it
equals (channels swapped, taps reversed), which is a single GEMM. Half types compute in float32.

The result is laid out channels-last when the input or the weight is (as PyTorch's CPU backends
choose), contiguous otherwise.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.aten.linalg.matmul import compute_array, lower_type_name
from ember.core.aten.nn import conv_direct, conv_grid
from ember.core.aten.nn.padding import constant_pad_nd
from ember.core.aten.shape import views
from ember.core.aten.shape.joining import memory_format_strides, suggest_memory_format
from ember.core.devices import CPU
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.pointwise import type_name
from ember.core.quiet import restore, silence
from ember.core.symbolic import INT_LIKE
from ember.core.tensor import Tensor, empty

convolution = define(
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, "
    "bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    ("core",),
)


def _expand_param(name: str, value, k: int) -> tuple:
    values = (value,) if isinstance(value, INT_LIKE) else tuple(value)
    if len(values) == 1:
        return values * k
    if len(values) != k:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {k} values to match the convolution "
            f"dimensions, but got {name}={list(values)}"
        )
    return values


def _plan(input: Tensor, weight: Tensor, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The checked parameters (each a tuple per spatial dim) and the output shape, in PyTorch's order."""
    k = weight.ndim - 2
    if k < 1:
        raise RuntimeError(f"weight should have at least three dimensions, got {weight.ndim}")
    stride = _expand_param("stride", stride, k)
    padding = _expand_param("padding", padding, k)
    dilation = _expand_param("dilation", dilation, k)
    output_padding = _expand_param("output_padding", output_padding, k)
    if input.ndim != weight.ndim:
        raise RuntimeError(
            f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight {list(weight._shape)}, "
            f"but got {input.ndim}-dimensional input of size {list(input._shape)} instead"
        )
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight._shape[0] < groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of size "
            f"{list(weight._shape)} instead"
        )
    if weight._shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of "
            f"size [{list(weight._shape)}] instead"
        )
    spatial = input._shape[2:]
    kernel = weight._shape[2:]
    if not transposed:
        channels = weight._shape[1] * groups
        if input._shape[1] != channels:
            raise RuntimeError(
                f"Given groups={groups}, weight of size {list(weight._shape)}, expected input{list(input._shape)} to "
                f"have {channels} channels, but got {input._shape[1]} channels instead"
            )
        out_channels = weight._shape[0]
        if bias is not None and (bias.ndim != 1 or bias._shape[0] != out_channels):
            raise RuntimeError(
                f"Given weight of size {list(weight._shape)}, expected bias to be 1-dimensional with {out_channels} "
                f"elements, but got bias of size {list(bias._shape)} instead"
            )
        padded = [n + 2 * p for n, p in zip(spatial, padding, strict=True)]
        dilated = [d * (kk - 1) + 1 for d, kk in zip(dilation, kernel, strict=True)]
        if any(a < b for a, b in zip(padded, dilated, strict=True)):
            raise RuntimeError(
                f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                f"({' x '.join(map(str, dilated))}). Kernel size can't be greater than actual input size"
            )
        out_spatial = tuple((a - b) // s + 1 for a, b, s in zip(padded, dilated, stride, strict=True))
    else:
        if input._shape[1] != weight._shape[0]:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(weight._shape)}, expected input{list(input._shape)} to "
                f"have {weight._shape[0]} channels, but got {input._shape[1]} channels instead"
            )
        out_channels = weight._shape[1] * groups
        if bias is not None and (bias.ndim != 1 or bias._shape[0] != out_channels):
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(weight._shape)}, expected bias to be 1-dimensional with "
                f"{out_channels} elements, but got bias of size {list(bias._shape)} instead"
            )
        if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation, strict=True)):
            names = ("height", "width") if k == 2 else ("width",)
            parts = [f"output_padding_{n}: {v}" for n, v in zip(names, output_padding, strict=True)]
            parts += [f"stride_{n}: {v}" for n, v in zip(names, stride, strict=True)]
            parts += [f"dilation_{n}: {v}" for n, v in zip(names, dilation, strict=True)]
            raise RuntimeError(
                f"output padding must be smaller than either stride or dilation, but got {' '.join(parts)}"
            )
        out_spatial = tuple(
            (n - 1) * s - 2 * p + d * (kk - 1) + op + 1
            for n, s, p, d, kk, op in zip(spatial, stride, padding, dilation, kernel, output_padding, strict=True)
        )
        if any(n <= 0 for n in out_spatial):
            raise RuntimeError(
                f"Given input size per channel: ({' x '.join(map(str, spatial))}). Calculated output size per "
                f"channel: ({' x '.join(map(str, out_spatial))}). Output size is too small"
            )
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected scalar type {type_name(input.dtype)} but found {type_name(weight.dtype)}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(
            f"Input type ({lower_type_name(input.dtype)}) and bias type ({lower_type_name(bias.dtype)}) should be "
            "the same"
        )
    _check_kernel_dtype(input, k, transposed, any(d != 1 for d in dilation))
    shape = (input._shape[0], out_channels, *out_spatial)
    channels_last = input.ndim == 4 and "channels_last" in (suggest_memory_format(input), suggest_memory_format(weight))
    strides = memory_format_strides(shape, "channels_last" if channels_last else "contiguous_format")
    return shape, strides, (stride, padding, dilation, output_padding)


def _check_kernel_dtype(input: Tensor, k: int, transposed: bool, dilated: bool) -> None:
    """PyTorch's CPU backends: bool nowhere, integers other than int64 not dilated nor transposed.
    An empty input runs no kernel, so it is refused nothing."""
    dtype = input.dtype
    if numel(input._shape) == 0 or dtype.category > D.INTEGRAL or dtype is D.int64:
        return
    if transposed:
        kernel = f"slow_conv_transpose{k}d_out_cpu" if k == 2 else "slow_conv_transpose2d_out_cpu"
    elif dilated:
        kernel = "slow_conv_dilated<>"
    elif dtype is D.bool_:
        kernel = "slow_conv2d_cpu"
    else:
        return
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{type_name(dtype)}'")


def _as_2d(params: tuple, k: int, fill: int) -> tuple:
    return params if k == 2 else (fill, *params)


def _conv_forward(x: np.ndarray, w: np.ndarray, bias, stride, padding, dilation, groups: int, out=None) -> np.ndarray:
    """(N, C, H, W) by (O, C/groups, kh, kw), plus ``bias`` (O,) or None, as an (N, O, Ho, Wo) array
    (a view of a channel-major one, or ``out`` where the direct kernel wrote it). The bias rides in
    the GEMM as a row of ones.

    Each GEMM spans the whole batch: one large 2-D product multithreads in BLAS far better than a
    stack of small ones. Stride 1 runs the direct kernel (float32) or on the padded grid
    (``conv_grid``); other strides gather the windows with ``as_strided`` (im2col), one GEMM per group.
    """
    if tuple(stride) == (1, 1):
        return _unit_stride_forward(x, w, bias, padding, dilation, groups, out)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    hp, wp = h + 2 * ph, wd + 2 * pw
    ho, wo = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    xp = np.zeros((c, n, hp, wp), x.dtype)
    xp[:, :, ph : ph + h, pw : pw + wd] = x.transpose(1, 0, 2, 3)
    s = xp.strides
    out = np.empty((o, n * ho * wo), x.dtype)
    extra = 0 if bias is None else 1
    columns = np.empty((cg * kh * kw + extra, n * ho * wo), x.dtype)
    if extra:
        columns[-1] = 1
    for g in range(groups):
        windows = as_strided(
            xp[g * cg :], (cg, kh, kw, n, ho, wo), (s[0], dh * s[2], dw * s[3], s[1], sh * s[2], sw * s[3])
        )
        np.copyto(columns[: cg * kh * kw].reshape(cg, kh, kw, n, ho, wo), windows)
        matrix = w[g * og : (g + 1) * og].reshape(og, cg * kh * kw)
        if extra:
            matrix = np.concatenate([matrix, bias[g * og : (g + 1) * og, None]], axis=1)
        np.matmul(matrix, columns, out=out[g * og : (g + 1) * og])
    return out.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)


def _conv_transpose(x: np.ndarray, w: np.ndarray, stride, padding, dilation, output_padding, groups: int):
    """(N, Cin, H, W) by (Cin, Cout/groups, kh, kw): one GEMM per group into columns, then each tap
    added into the output in place (col2im)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    (sh, sw), (ph, pw), (dh, dw), (oph, opw) = stride, padding, dilation, output_padding
    channels = np.ascontiguousarray(x.transpose(1, 0, 2, 3)).reshape(c, n * h * wd)
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    full = np.zeros((n, groups * og, full_h, full_w), x.dtype)
    for g in range(groups):
        weight = w[g * cg : (g + 1) * cg].reshape(cg, og * kh * kw)
        columns = np.matmul(weight.T, channels[g * cg : (g + 1) * cg]).reshape(og, kh, kw, n, h, wd)
        target = full[:, g * og : (g + 1) * og]
        for i in range(kh):
            rows = slice(i * dh, i * dh + (h - 1) * sh + 1, sh)
            for j in range(kw):
                cols = slice(j * dw, j * dw + (wd - 1) * sw + 1, sw)
                target[:, :, rows, cols] += columns[:, i, j].transpose(1, 0, 2, 3)
    return full[:, :, ph : full_h - ph, pw : full_w - pw]


def _conv_transpose_unit_stride(x: np.ndarray, w: np.ndarray, bias, padding, dilation, groups: int, out=None):
    """A stride-1 transposed convolution as the plain one it equals: each group's weight with its
    two channel dims swapped and its taps reversed, over the input padded by ``d*(k-1) - p``. The
    plain kernel's single GEMM beats a GEMM into columns and a scatter-add per tap."""
    c = x.shape[1]
    _, og, kh, kw = w.shape
    cg = c // groups
    swapped = w.reshape(groups, cg, og, kh, kw).transpose(0, 2, 1, 3, 4).reshape(groups * og, cg, kh, kw)
    pad = tuple(d * (k - 1) - p for d, k, p in zip(dilation, (kh, kw), padding, strict=True))
    return _unit_stride_forward(x, swapped[:, :, ::-1, ::-1], bias, pad, dilation, groups, out)


def _unit_stride_forward(x: np.ndarray, w: np.ndarray, bias, padding, dilation, groups: int, out=None):
    """A stride-1 convolution: the direct kernel for float32 (into ``out`` when given), else the
    GEMM on the padded grid."""
    if conv_direct.usable(x, w):
        return conv_direct.forward(x, w, bias, padding, dilation, groups, out)
    return conv_grid.forward(x, w, bias, padding, dilation, groups)


def _is_unit_stride_transpose(w: np.ndarray, stride, padding, dilation, output_padding) -> bool:
    """Stride 1, no output padding, and padding that the equal plain convolution can take (not
    past ``d*(k-1)``, which would crop instead of pad)."""
    return (
        tuple(stride) == (1, 1)
        and tuple(output_padding) == (0, 0)
        and all(p <= d * (k - 1) for p, d, k in zip(padding, dilation, w.shape[2:], strict=True))
    )


@convolution.register_kernel("cpu")
def _convolution_cpu(
    input: Tensor, weight: Tensor, bias, stride, padding, dilation, transposed: bool, output_padding, groups: int
) -> Tensor:
    shape, strides, (stride, padding, dilation, output_padding) = _plan(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )
    out = empty(shape, input.dtype, CPU, strides)
    if numel(shape) == 0:
        return out
    k = weight.ndim - 2
    if k == 3:
        # The 3-D convolutions are compositions of the 2-D ones (ember.nn.functional.conv3d).
        raise NotImplementedError(
            "aten::convolution has no CPU kernel for 3-D inputs: call nn.functional.conv3d or conv_transpose3d"
        )
    x, w = compute_array(input), compute_array(weight)
    if k == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
    stride, padding, dilation = _as_2d(stride, k, 1), _as_2d(padding, k, 0), _as_2d(dilation, k, 1)
    b = None if bias is None else compute_array(bias)
    target = conv_direct.target(out._array, x.dtype, k == 1)  # where the direct kernel may write
    if numel(input._shape) == 0 or numel(weight._shape) == 0:
        result = np.zeros((shape[0], shape[1], *((1,) if k == 1 else ()), *shape[2:]), x.dtype)
    elif transposed and _is_unit_stride_transpose(w, stride, padding, dilation, _as_2d(output_padding, k, 0)):
        result, b = _conv_transpose_unit_stride(x, w, b, padding, dilation, groups, target), None
    elif transposed:
        result = _conv_transpose(x, w, stride, padding, dilation, _as_2d(output_padding, k, 0), groups)
    else:
        result, b = _conv_forward(x, w, b, stride, padding, dilation, groups, target), None
    if result is target:
        return out
    if k == 1:
        result = result[:, :, 0, :]
    token = silence()  # float32 beyond float16's range rounds to inf, as in PyTorch
    try:
        if b is not None:  # the kernels that do not take the bias in their GEMM
            result = np.add(result, b.reshape((-1,) + (1,) * k))
        np.copyto(out._array, result, casting="unsafe")
    finally:
        restore(token)
    return out


@convolution.register_meta
def _convolution_meta(
    input: Tensor, weight: Tensor, bias, stride, padding, dilation, transposed: bool, output_padding, groups: int
) -> Tensor:
    shape, strides, _ = _plan(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    return empty(shape, input.dtype, input.device, strides)


# -- the composites with torch.nn.functional's signatures ---------------------------------------------------


def _batchify(input: Tensor, k: int, name: str) -> tuple[Tensor, bool]:
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(
            f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, but got input of size: "
            f"{list(input._shape)}"
        )
    if input.ndim == k + 1:
        return views.unsqueeze(input, 0), False
    return input, True


def _same_padding(input: Tensor, weight: Tensor, stride, dilation, k: int) -> tuple[Tensor, tuple]:
    """``padding="same"``: PyTorch pads symmetrically where it can and pads the far end where it cannot."""
    if any(s != 1 for s in _expand_param("stride", stride, k)):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    dilation = _expand_param("dilation", dilation, k)
    left, extra = [], []
    for d, kk in zip(dilation, weight._shape[2:], strict=False):
        total = d * (kk - 1)
        left.append(total // 2)
        extra.append(total - 2 * (total // 2))
    if any(extra):
        warnings.warn(
            "Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy of the "
            "input be created",
            UserWarning,
            stacklevel=4,
        )
        pad = []
        for e in reversed(extra):
            pad += [0, e]
        input = constant_pad_nd(input, pad, 0)
    return input, tuple(left)


def _conv_nd(name: str, k: int, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    _check_tensors(name, input, weight, bias)
    if isinstance(padding, str) and padding not in ("same", "valid"):
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    batched_input, batched = _batchify(input, k, name)
    if padding == "valid":
        padding = 0
    elif padding == "same":
        batched_input, padding = _same_padding(batched_input, weight, stride, dilation, k)
    result = convolution(
        batched_input, weight, bias, _ints(stride), _ints(padding), _ints(dilation), False, [0], groups
    )
    return result if batched else views.squeeze_dims(result, (0,))


def _ints(value) -> list:
    return [value] if isinstance(value, INT_LIKE) else list(value)


def _check_tensors(name: str, input, weight, bias) -> None:
    for position, (arg, value) in enumerate((("input", input), ("weight", weight)), start=1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__}"
            )
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{name}(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")


conv1d_op = define(
    "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, "
    "SymInt[1] dilation=1, SymInt groups=1) -> Tensor"
)
conv1d_padding = define(
    'conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, str padding="valid", '
    "SymInt[1] dilation=1, SymInt groups=1) -> Tensor"
)
conv2d_op = define(
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
    "SymInt[2] dilation=1, SymInt groups=1) -> Tensor"
)
conv2d_padding = define(
    'conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, str padding="valid", '
    "SymInt[2] dilation=1, SymInt groups=1) -> Tensor"
)
conv_transpose2d_op = define(
    "conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
    "SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor"
)


@conv1d_op.register_decomposition
def _conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@conv1d_padding.register_decomposition
def _conv1d_padding(input, weight, bias=None, stride=1, padding="valid", dilation=1, groups=1):
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@conv2d_op.register_decomposition
def _conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@conv2d_padding.register_decomposition
def _conv2d_padding(input, weight, bias=None, stride=1, padding="valid", dilation=1, groups=1):
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@conv_transpose2d_op.register_decomposition
def _conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    _check_tensors("conv_transpose2d", input, weight, bias)
    batched_input, batched = _batchify(input, 2, "conv_transpose2d")
    result = convolution(
        batched_input, weight, bias, _ints(stride), _ints(padding), _ints(dilation), True, _ints(output_padding), groups
    )
    return result if batched else views.squeeze_dims(result, (0,))


@public("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    op = conv1d_padding if isinstance(padding, str) else conv1d_op
    return op(input, weight, bias, stride, padding, dilation, groups)


@public("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    op = conv2d_padding if isinstance(padding, str) else conv2d_op
    return op(input, weight, bias, stride, padding, dilation, groups)


@public("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1) -> Tensor:
    return conv_transpose2d_op(input, weight, bias, stride, padding, output_padding, groups, dilation)
