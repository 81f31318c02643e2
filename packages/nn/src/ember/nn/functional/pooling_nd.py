"""The pools the core has no kernel for: 3-D max and average pools, adaptive max pools, adaptive
average 3-D, power-average (LP) pools, fractional max pools and max unpooling, as gathers over
window tables (``pool_windows``) or compositions of the other pools."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.creation import tensor as make_tensor
from ember.core.functional import avg_pool2d
from ember.core.tensor import Tensor
from ember.nn.functional import pool_windows as W
from ember.nn.functional.activation import relu
from ember.nn.functional.pooling1d import avg_pool1d, max_pool1d

__all__ = [
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool3d",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]


def _batched(input: Tensor, k: int) -> tuple[Tensor, bool]:
    return (input, True) if input.ndim == k + 2 else (input.unsqueeze(0), False)


def _unbatch(value: Any, batched: bool) -> Any:
    if batched:
        return value
    if isinstance(value, tuple):
        return tuple(v.squeeze(0) for v in value)
    return value.squeeze(0)


def _stride(stride: Any, kernel: Any) -> Any:
    return kernel if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else stride


def max_pool3d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = True,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    return _max_pool_nd("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:  # fmt: skip
    return _max_pool_nd("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = True,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def _max_pool_nd(name, k, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    W.check_batched(name, input, k)
    x, batched = _batched(input, k)
    kernel = W.expand("kernel_size", kernel_size, k)
    strides = W.expand("stride", _stride(stride, kernel_size), k)
    sizes = tuple(x.shape[2:])
    outs, coords = W.fixed_windows(
        name, sizes, kernel, strides, W.expand("padding", padding, k), W.expand("dilation", dilation, k), ceil_mode,
        x.shape[1],
    )  # fmt: skip
    out = W.max_over_windows(x, k, W.table(sizes, coords), outs, return_indices)
    return _unbatch(out, batched)


def avg_pool3d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True, divisor_override: int | None = None,
) -> Tensor:  # fmt: skip
    W.check_batched("avg_pool3d", input, 3)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x, batched = _batched(input, 3)
    kernel = W.expand("kernel_size", kernel_size, 3)
    strides = W.expand("stride", _stride(stride, kernel_size), 3)
    pads = W.expand("padding", padding, 3)
    sizes = tuple(x.shape[2:])
    if any(n + 2 * p < kk for n, p, kk in zip(sizes, pads, kernel, strict=True)):
        raise RuntimeError(
            f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller than kernel size "
            f"(kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})"
        )
    outs, coords = W.fixed_windows("avg_pool3d", sizes, kernel, strides, pads, (1, 1, 1), ceil_mode, x.shape[1])
    sums = W.gather_windows(x, 3, W.table(sizes, coords), 0.0).sum(-1)
    if divisor_override is not None:
        result = sums / divisor_override
    else:
        counts = []
        for size, out, kk, s, p in zip(sizes, outs, kernel, strides, pads, strict=True):
            start = np.arange(out) * s - p
            end = np.minimum(start + kk, size + p)
            inside = np.minimum(end, size) - np.maximum(start, 0)
            counts.append((end - start) if count_include_pad else inside)
        divisor = make_tensor(W.windows_product(*counts), dtype=x.dtype, device=x.device)
        result = sums / divisor
    return _unbatch(result.reshape(*x.shape[:2], *outs), batched)


def _output_sizes(name: str, output_size: Any, sizes: tuple, k: int) -> tuple:
    values = (output_size,) * k if not isinstance(output_size, (tuple, list)) else tuple(output_size)
    if len(values) != k:
        raise ValueError(f"{name}: output_size must be an int or a tuple of {k} ints")
    return tuple(size if v is None else int(v) for v, size in zip(values, sizes, strict=True))


def _adaptive_max(name: str, k: int, input: Tensor, output_size: Any, return_indices: bool) -> Any:
    W.check_batched(name, input, k)
    x, batched = _batched(input, k)
    sizes = tuple(x.shape[2:])
    outs = _output_sizes(name, output_size, sizes, k)
    if any(n < 0 for n in outs):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received {outs}")
    coords = W.adaptive_windows(sizes, outs)
    return _unbatch(W.max_over_windows(x, k, W.table(sizes, coords), outs, return_indices), batched)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d() argument 'input' must be 2D or 3D, but got {input.ndim}D")
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, True)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d() argument 'input' must be 2D or 3D, but got {input.ndim}D")
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, True)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, True)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    W.check_batched("adaptive_avg_pool3d", input, 3)
    x, batched = _batched(input, 3)
    sizes = tuple(x.shape[2:])
    outs = _output_sizes("adaptive_avg_pool3d", output_size, sizes, 3)
    coords = W.adaptive_windows(sizes, outs)
    sums = W.gather_windows(x, 3, W.table(sizes, coords), 0.0).sum(-1)
    counts = W.windows_product(*[(c >= 0).sum(1) for c in coords])
    result = sums / make_tensor(counts, dtype=x.dtype, device=x.device)
    return _unbatch(result.reshape(*x.shape[:2], *outs), batched)


def _lp_finish(out: Tensor, norm_type: float, window: int) -> Tensor:
    return (out.sign() * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """The ``norm_type``-power mean of each window, times the window size, to the power ``1/norm_type``."""
    kernel = W.expand("kernel_size", kernel_size, 1)
    out = avg_pool1d(input.pow(norm_type), kernel_size, _stride(stride, kernel_size), 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel[0])


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    kh, kw = W.expand("kernel_size", kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), kernel_size, _stride(stride, kernel_size), 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    kd, kh, kw = W.expand("kernel_size", kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), kernel_size, _stride(stride, kernel_size), 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)


def _fractional_sequence(sample: np.ndarray, size: int, out: int, kernel: int) -> np.ndarray:
    """PyTorch's interval starts, computed in the input's floating type as its kernel does."""
    starts = np.zeros(sample.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = sample.dtype.type(size - kernel) / sample.dtype.type(out - 1)
        i = np.arange(out - 1, dtype=sample.dtype)
        scaled = ((i + sample[..., None]) * alpha).astype(np.int64)
        starts[..., :-1] = scaled - (sample * alpha).astype(np.int64)[..., None]
    if out > 0:
        starts[..., -1] = size - kernel
    return starts


def _fractional(
    name: str, k: int, input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any, return_indices: bool,
    samples: Tensor | None,
) -> Any:  # fmt: skip
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    W.check_batched(name, input, k)
    x, batched = _batched(input, k)
    sizes = tuple(x.shape[2:])
    kernel = W.expand("kernel_size", kernel_size, k)
    if output_size is None:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * k
        outs = tuple(int(n * r) for n, r in zip(sizes, ratio, strict=True))
    else:
        outs = W.expand("output_size", output_size, k)
    names = ("time", "height", "width")[3 - k :]
    prefix = "fractional_max_pool3d_out()" if k == 3 else f"{name}()"
    # PyTorch checks the last dimension first for 2-D pools and the first for 3-D ones.
    order = range(k) if k == 3 else reversed(range(k))
    for d in order:
        if outs[d] + kernel[d] - 1 > sizes[d]:
            raise RuntimeError(
                f"{prefix}: pool {names[d]} {kernel[d]} too large relative to input {names[d]} {sizes[d]}"
            )
    n, c = x.shape[0], x.shape[1]
    if samples is None:
        from ember.core.aten.factories.factories import empty_function

        samples = empty_function((n, c, k), dtype=x.dtype, device=x.device).uniform_()
    drawn = np.asarray(samples.detach().numpy())
    # PyTorch's sample order: width first for 2-D pools, depth first for 3-D ones.
    order = (1, 0) if k == 2 else (0, 1, 2)
    index = None
    for dim in range(k):
        starts = _fractional_sequence(drawn[..., order[dim]], sizes[dim], outs[dim], kernel[dim])
        coord = starts[..., :, None] + np.arange(kernel[dim])
        stride = int(np.prod(sizes[dim + 1 :]))
        shape = [n, c] + [1] * (2 * k)
        shape[2 + dim], shape[2 + k + dim] = outs[dim], kernel[dim]
        part = (coord * stride).reshape(shape)
        index = part if index is None else index + part
    index = np.broadcast_to(index, (n, c, *outs, *kernel)).reshape(n, c, int(np.prod(outs)), int(np.prod(kernel)))
    return _unbatch(W.max_over_windows(x, k, index, outs, return_indices), batched)


def fractional_max_pool2d_with_indices(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:  # fmt: skip
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool2d(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:  # fmt: skip
    return _fractional(
        "fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )


def fractional_max_pool3d_with_indices(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:  # fmt: skip
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:  # fmt: skip
    return _fractional(
        "fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )


def _unpool_size(input: Tensor, k: int, kernel: tuple, stride: tuple, padding: tuple, output_size: Any) -> tuple:
    default = tuple((input.shape[input.ndim - k + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(k))
    if output_size is None:
        return default
    if len(output_size) == k + 2:
        output_size = output_size[2:]
    if len(output_size) != k:
        raise ValueError(
            f"output_size should be a sequence containing {k} or {k + 2} elements, but it has a length of "
            f"'{len(output_size)}'"
        )
    for d in range(k):
        low = default[d] - stride[d]
        high = default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
    return tuple(int(n) for n in output_size)


def _max_unpool(name: str, k: int, input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size) -> Tensor:
    kernel = W.expand("kernel_size", kernel_size, k)
    strides = W.expand("stride", _stride(stride, kernel_size), k)
    pads = W.expand("padding", padding, k)
    outs = _unpool_size(input, k, kernel, strides, pads, output_size)
    if indices.dtype is not D.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) but got indices "
            f"tensor with shape: {list(indices.shape)}"
        )
    lead = tuple(input.shape[: input.ndim - k])
    total = int(np.prod(outs))
    flat_idx = indices.reshape(*lead, -1)
    if flat_idx.numel():
        values = np.asarray(flat_idx.numpy()).reshape(-1)
        bad = values[(values < 0) | (values >= total)]
        if bad.size:
            volume = "x".join(map(str, outs if k > 1 else (outs[0], 1)))
            raise RuntimeError(f"Found an invalid max index: {bad[0]} (output volumes are of size {volume})")
    out = input.new_zeros((*lead, total)).scatter(-1, flat_idx, input.reshape(*lead, -1))
    return out.reshape(*lead, *outs)


def max_unpool1d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    """The partial inverse of ``max_pool1d``: each value goes back to its index, zeros elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)
