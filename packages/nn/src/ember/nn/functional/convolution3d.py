"""The convolutions the core has no kernel for, composed from the ones it has.

``conv_transpose1d`` is the core's transposed ``convolution`` on 1-D input. ``conv3d`` gathers, for
each output depth, the ``kd`` input depth slices its window covers and stacks them onto the
channels (taps inside each group, so grouping holds); one 2-D convolution over (batch x depth) with
the weight's depth taps moved to its channels then computes every output at once.
``conv_transpose3d`` is the converse: one 2-D transposed convolution yields each input depth's
contribution to every depth tap, and each tap's slab is spread ``stride`` apart along depth,
shifted by its dilated offset and summed, before ``padding`` is cropped. Gradients come from the
parts.
"""

from __future__ import annotations

from typing import Any

from ember.core.aten.nn.convolution import conv2d, conv_transpose2d, convolution
from ember.core.aten.shape.joining import stack
from ember.core.functional import pad as _pad
from ember.core.tensor import Tensor

__all__ = ["conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose3d"]


def _triple(name: str, value: Any, k: int = 3) -> tuple:
    values = (value,) if isinstance(value, int) else tuple(value)
    if len(values) == 1:
        values = values * k
    if len(values) != k:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {k} values to match the convolution "
            f"dimensions, but got {name}={list(values)}"
        )
    return values


def _check(name: str, input: Any, weight: Any, bias: Any, k: int) -> bool:
    for position, (arg, value) in enumerate((("input", input), ("weight", weight)), start=1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__}"
            )
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{name}(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(
            f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, but got input of size: "
            f"{list(input.shape)}"
        )
    if weight.ndim != k + 2:
        raise RuntimeError(
            f"Expected {k + 2}-dimensional weight for {name}, but got weight of size {list(weight.shape)}"
        )
    return input.ndim == k + 2


def conv_transpose1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:  # fmt: skip
    batched = _check("conv_transpose1d", input, weight, bias, 1)
    x = input if batched else input.unsqueeze(0)
    out = convolution(
        x, weight, bias, list(_triple("stride", stride, 1)), list(_triple("padding", padding, 1)),
        list(_triple("dilation", dilation, 1)), True, list(_triple("output_padding", output_padding, 1)), groups,
    )  # fmt: skip
    return out if batched else out.squeeze(0)


def _same_pads(weight: Tensor, stride: tuple, dilation: tuple) -> list[int]:
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads: list[int] = []
    for d, k in zip(reversed(dilation), reversed(tuple(weight.shape[2:])), strict=True):
        total = d * (k - 1)
        pads += [total // 2, total - total // 2]
    return pads


def conv3d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
    groups: int = 1,
) -> Tensor:  # fmt: skip
    batched = _check("conv3d", input, weight, bias, 3)
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _triple("stride", stride), _triple("dilation", dilation)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same":
            x = _pad(x, _same_pads(weight, stride, dilation))
        padding = (0, 0, 0)
    padding = _triple("padding", padding)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    n, c, depth = x.shape[0], x.shape[1], x.shape[2]
    out_c, c_per_group, kd = weight.shape[0], weight.shape[1], weight.shape[2]
    if c != c_per_group * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input{list(x.shape)} to have "
            f"{c_per_group * groups} channels, but got {c} channels instead"
        )
    if padding[0]:
        x = _pad(x, [0, 0, 0, 0, padding[0], padding[0]])
    padded = depth + 2 * padding[0]
    span = dilation[0] * (kd - 1) + 1
    if padded < span:
        sizes = [padded, *(s + 2 * p for s, p in zip(x.shape[3:], padding[1:], strict=True))]
        kernel = [span, *(d * (k - 1) + 1 for d, k in zip(dilation[1:], weight.shape[3:], strict=True))]
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, sizes))}). Kernel size: "
            f"({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual input size"
        )
    out_d = (padded - span) // stride[0] + 1
    last = (out_d - 1) * stride[0] + 1
    taps = [x[:, :, t * dilation[0] : t * dilation[0] + last : stride[0]] for t in range(kd)]
    h, w = x.shape[3], x.shape[4]
    # (N, kd, C, Do, H, W) -> (N, Do, groups, kd, C/groups, H, W): each group's channels stay together.
    stacked = stack(taps, 1).reshape(n, kd, groups, c_per_group, out_d, h, w).permute(0, 4, 2, 1, 3, 5, 6)
    planes = stacked.reshape(n * out_d, groups * kd * c_per_group, h, w)
    flat_weight = weight.permute(0, 2, 1, 3, 4).reshape(out_c, kd * c_per_group, *weight.shape[3:])
    out = conv2d(planes, flat_weight, bias, stride[1:], padding[1:], dilation[1:], groups)
    out = out.reshape(n, out_d, out_c, out.shape[2], out.shape[3]).permute(0, 2, 1, 3, 4).contiguous()
    return out if batched else out.squeeze(0)


def conv_transpose3d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:  # fmt: skip
    batched = _check("conv_transpose3d", input, weight, bias, 3)
    x = input if batched else input.unsqueeze(0)
    stride, padding = _triple("stride", stride), _triple("padding", padding)
    output_padding, dilation = _triple("output_padding", output_padding), _triple("dilation", dilation)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    n, c, depth, h, w = x.shape
    kd = weight.shape[2]
    if weight.shape[0] != c:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} to have "
            f"{weight.shape[0]} channels, but got {c} channels instead"
        )
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation, strict=True)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            + " ".join(
                f"output_padding: {op} stride: {s} dilation: {d}"
                for op, s, d in zip(output_padding, stride, dilation, strict=True)
            )
        )
    out_per_group = weight.shape[1]
    out_c = out_per_group * groups
    # Output channels of one 2-D transposed convolution laid out (groups, kd, C_out/groups).
    flat_weight = weight.permute(0, 2, 1, 3, 4).reshape(c, kd * out_per_group, *weight.shape[3:])
    planes = x.permute(0, 2, 1, 3, 4).reshape(n * depth, c, h, w)
    y = conv_transpose2d(planes, flat_weight, None, stride[1:], padding[1:], output_padding[1:], groups, dilation[1:])
    ho, wo = y.shape[2], y.shape[3]
    y = y.reshape(n, depth, groups, kd, out_per_group, ho, wo)
    spread = (depth - 1) * stride[0] + 1
    full = spread + dilation[0] * (kd - 1)
    total = None
    for t in range(kd):
        slab = y[:, :, :, t].permute(0, 2, 3, 1, 4, 5).reshape(n, out_c, depth, 1, ho, wo)
        if stride[0] > 1:
            slab = _pad(slab, [0, 0, 0, 0, 0, stride[0] - 1])
        slab = slab.reshape(n, out_c, depth * stride[0], ho, wo)[:, :, :spread]
        before = t * dilation[0]
        slab = _pad(slab, [0, 0, 0, 0, before, full - spread - before])
        total = slab if total is None else total + slab
    out_d = full - 2 * padding[0] + output_padding[0]
    if out_d <= 0:
        raise RuntimeError(
            f"Given input size per channel: ({depth} x {h} x {w}). Calculated output size per channel: "
            f"({out_d} x {ho} x {wo}). Output size is too small"
        )
    extra = output_padding[0] - padding[0]
    if extra > 0:
        total = _pad(total, [0, 0, 0, 0, 0, extra])
    out = total[:, :, padding[0] : padding[0] + out_d].contiguous()
    if bias is not None:
        out = out + bias.reshape(1, out_c, 1, 1, 1)
    return out if batched else out.squeeze(0)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """A 1-D convolution over (time, batch, channels) input with a (width, in, out) weight."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = convolution(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, [1], [pad], [1], False, [0], 1)
    return out.permute(2, 0, 1).contiguous()
