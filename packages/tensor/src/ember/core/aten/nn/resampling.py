"""Resampling: ``upsample_nearest1d``/``2d``, ``upsample_bilinear2d`` (with their ``.vec`` forms) and
``torch.nn.functional.interpolate`` over them (modes nearest, nearest-exact, bilinear, area).

Source coordinates follow PyTorch's CPU kernels, in the same precision: nearest picks
``min(floor(dst * scale), in - 1)`` in float32 with ``scale = in / out``, or ``1 / scale_factor``
when a scale factor is given; bilinear maps ``dst`` to ``scale * (dst + 0.5) - 0.5`` (clamped at 0),
or to ``dst * (in - 1) / (out - 1)`` with ``align_corners``, in the input's compute dtype, and blends
the two neighbours of each axis. Both gather with index arrays, so each is a few NumPy steps.
Results keep a channels-last layout.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as D
from ember.core.aten.linalg.matmul import compute_array
from ember.core.aten.nn.pooling import adaptive_avg_pool2d
from ember.core.aten.shape.joining import memory_format_strides, suggest_memory_format
from ember.core.dispatch import define
from ember.core.layout import numel
from ember.core.pointwise import type_name
from ember.core.quiet import restore, silence
from ember.core.symbolic import SymInt, sym_int
from ember.core.tensor import Tensor, empty


def _scaled(size, scale: float):
    """``int(size * scale)``, the output size of a resampling by ``scale`` (truncated; the sizes and
    scales are positive, so floor and truncation agree). A symbolic size stays symbolic: integer
    arithmetic for an integral scale, the truncation of a float product otherwise."""
    if isinstance(size, SymInt):
        return size * int(scale) if float(scale).is_integer() else sym_int(size * scale)
    return int(size * scale)


nearest1d = define("upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", ("core",))
nearest2d = define(
    "upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor",
    ("core",),
)
nearest_exact1d = define(
    "_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", ("core",)
)
nearest_exact2d = define(
    "_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) "
    "-> Tensor",
    ("core",),
)
bilinear2d = define(
    "upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, "
    "float? scales_w=None) -> Tensor",
    ("core",),
)
nearest2d_vec = define("upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor")
bilinear2d_vec = define(
    "upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"
)

_FLOAT_OR_BYTE = "floating types and uint8"


def _plan(self: Tensor, output_size, name: str) -> tuple:
    k = len(output_size)
    if self.ndim != k + 2:
        raise RuntimeError(
            f"It is expected input_size equals to {k + 2}, but got size {self.ndim}"
            if self.ndim
            else f"{name}: expected a {k + 2}-D input"
        )
    spatial = self._shape[2:]
    if any(n <= 0 for n in spatial) or any(n <= 0 for n in output_size):
        axes = ("H", "W") if k == 2 else ("W",)
        given = ", ".join(f"{a}: {n}" for a, n in zip(axes, spatial, strict=True))
        wanted = ", ".join(f"{a}: {n}" for a, n in zip(axes, output_size, strict=True))
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({given}) output ({wanted})"
        )
    if numel(self._shape) and not (self.dtype.category == D.FLOATING or self.dtype is D.uint8):
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(self.dtype)}'")
    shape = (*self._shape[:2], *output_size)
    return shape, memory_format_strides(shape, suggest_memory_format(self)) if self.ndim == 4 else None


def _nearest_index(size: int, out: int, scale, exact: bool) -> np.ndarray:
    if not exact and out == size:
        return np.arange(out)
    if not exact and out == 2 * size:
        return np.arange(out) >> 1
    step = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(size) / np.float32(out)
    position = np.arange(out, dtype=np.float32)
    if exact:
        position = position + np.float32(0.5)
    return np.minimum(np.floor(position * step).astype(np.int64), size - 1)


def _define_nearest(op, k: int, exact: bool) -> None:
    name = f"upsample_nearest{k}d" if not exact else f"_upsample_nearest_exact{k}d"

    def scales_of(scales) -> list:
        return list(scales) if k == 2 else [scales[0]]

    def kernel(self: Tensor, output_size, *scales) -> Tensor:
        output_size = tuple(output_size)
        shape, strides = _plan(self, output_size, name)
        out = empty(shape, self.dtype, self.device, strides)
        if numel(shape) == 0:
            return out
        factors = scales_of(scales) if scales else [None] * k
        index = [_nearest_index(n, o, s, exact) for n, o, s in zip(self._shape[2:], output_size, factors, strict=True)]
        grid = np.ix_(*index)
        np.copyto(out._array, self._array[(Ellipsis, *grid)])
        return out

    def meta(self: Tensor, output_size, *scales) -> Tensor:
        shape, strides = _plan(self, tuple(output_size), name)
        return empty(shape, self.dtype, self.device, strides)

    if k == 1:
        op.register_kernel("cpu")(lambda self, output_size, scales=None: kernel(self, output_size, scales))
        op.register_meta(lambda self, output_size, scales=None: meta(self, output_size, scales))
    else:
        op.register_kernel("cpu")(
            lambda self, output_size, scales_h=None, scales_w=None: kernel(self, output_size, scales_h, scales_w)
        )
        op.register_meta(
            lambda self, output_size, scales_h=None, scales_w=None: meta(self, output_size, scales_h, scales_w)
        )


_define_nearest(nearest1d, 1, exact=False)
_define_nearest(nearest2d, 2, exact=False)
_define_nearest(nearest_exact1d, 1, exact=True)
_define_nearest(nearest_exact2d, 2, exact=True)


def _linear_weights(size: int, out: int, align_corners: bool, scale, dtype) -> tuple:
    """(index0, index1, weight0, weight1) of each output position along one axis, in ``dtype``."""
    if align_corners:
        step = dtype.type((size - 1) / (out - 1)) if out > 1 else dtype.type(0)
        source = step * np.arange(out, dtype=dtype)
    else:
        step = dtype.type(1.0 / scale) if scale is not None and scale > 0 else dtype.type(size) / dtype.type(out)
        source = step * (np.arange(out, dtype=dtype) + dtype.type(0.5)) - dtype.type(0.5)
        source = np.maximum(source, dtype.type(0))
    # Scales that do not match the sizes may reach past the last input: clamp as PyTorch does.
    index0 = np.minimum(source.astype(np.int64), size - 1)
    index1 = index0 + (index0 < size - 1)
    weight1 = np.clip(source - index0.astype(dtype), dtype.type(0), dtype.type(1))
    return index0, index1, dtype.type(1) - weight1, weight1


def _bilinear_plan(self: Tensor, output_size) -> tuple:
    return _plan(self, tuple(output_size), "upsample_bilinear2d")


@bilinear2d.register_kernel("cpu")
def _bilinear_cpu(self: Tensor, output_size, align_corners: bool, scales_h=None, scales_w=None) -> Tensor:
    shape, strides = _bilinear_plan(self, output_size)
    out = empty(shape, self.dtype, self.device, strides)
    if numel(shape) == 0:
        return out
    x = compute_array(self)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    x = x.astype(dtype, copy=False)
    h0, h1, hw0, hw1 = _linear_weights(self._shape[2], shape[2], align_corners, scales_h, dtype)
    w0, w1, ww0, ww1 = _linear_weights(self._shape[3], shape[3], align_corners, scales_w, dtype)
    token = silence()
    try:
        if self.dtype is D.uint8:
            result = _bilinear_uint8(self, shape, align_corners, scales_h, scales_w)
        else:
            rows = x[..., h0, :] * hw0[:, None] + x[..., h1, :] * hw1[:, None]
            result = rows[..., w0] * ww0 + rows[..., w1] * ww1
        np.copyto(out._array, result, casting="unsafe")
    finally:
        restore(token)
    return out


def _fixed_point(weights: tuple) -> tuple:
    """PyTorch's uint8 weights: int16 fixed point with as many fraction bits as the largest weight allows."""
    largest = max(float(w.max()) for w in weights)
    bits = 0
    while bits < 22 and int(0.5 + largest * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    return bits, tuple(np.trunc(w * (1 << bits) + 0.5).astype(np.int64) for w in weights)


def _bilinear_uint8(self: Tensor, shape: tuple, align_corners: bool, scales_h, scales_w) -> np.ndarray:
    """PyTorch's uint8 kernel: separable, columns first, each pass in fixed point rounded to uint8."""
    x = self._array.astype(np.int64)
    double = np.dtype(np.float64)
    w0, w1, ww0, ww1 = _linear_weights(self._shape[3], shape[3], align_corners, scales_w, double)
    h0, h1, hw0, hw1 = _linear_weights(self._shape[2], shape[2], align_corners, scales_h, double)
    bits, (ww0, ww1) = _fixed_point((ww0, ww1))
    columns = ((x[..., w0] * ww0 + x[..., w1] * ww1 + (1 << (bits - 1))) >> bits).clip(0, 255)
    bits, (hw0, hw1) = _fixed_point((hw0, hw1))
    rows = columns[..., h0, :] * hw0[:, None] + columns[..., h1, :] * hw1[:, None]
    return ((rows + (1 << (bits - 1))) >> bits).clip(0, 255)


@bilinear2d.register_meta
def _bilinear_meta(self: Tensor, output_size, align_corners: bool, scales_h=None, scales_w=None) -> Tensor:
    shape, strides = _bilinear_plan(self, output_size)
    return empty(shape, self.dtype, self.device, strides)


def _vec_sizes(input: Tensor, output_size, scale_factors) -> tuple[list, list]:
    """The ``.vec`` forms: an output size from the scale factors (truncated), and the scales to pass on."""
    spatial = input._shape[2:]
    if output_size is not None:
        if scale_factors is not None:
            raise RuntimeError("Must specify exactly one of output_size and scale_factors")
        return list(output_size), [None] * len(spatial)
    if scale_factors is None:
        raise RuntimeError("Must specify exactly one of output_size and scale_factors")
    sizes = [_scaled(n, s) for n, s in zip(spatial, scale_factors, strict=True)]  # truncated, as PyTorch casts
    return sizes, list(scale_factors)


@nearest2d_vec.register_decomposition
def _nearest2d_vec(input: Tensor, output_size, scale_factors) -> Tensor:
    sizes, scales = _vec_sizes(input, output_size, scale_factors)
    return nearest2d(input, sizes, *scales)


@bilinear2d_vec.register_decomposition
def _bilinear2d_vec(input: Tensor, output_size, align_corners: bool, scale_factors) -> Tensor:
    sizes, scales = _vec_sizes(input, output_size, scale_factors)
    return bilinear2d(input, sizes, align_corners, *scales)


# -- interpolate ----------------------------------------------------------------------------------------------

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """``torch.nn.functional.interpolate`` for modes nearest, nearest-exact, bilinear and area."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
                "trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    spatial = list(input._shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scales = None
        if isinstance(size, list | tuple):
            if len(size) != dim:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {spatial} and output size of {size}. Please provide input tensor in (N, C, d1, "
                    "d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                )
            output_size = list(size)
        else:
            output_size = [size] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, list | tuple):
            if len(scale_factor) != dim:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please provide input "
                    "tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [_scaled(n, s) for n, s in zip(spatial, scales, strict=True)]
        scales = None
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not implemented in ember")
    if output_size is None:
        output_size = [_scaled(n, s) for n, s in zip(spatial, scales, strict=True)]
    factors = scales if scales is not None else [None] * max(dim, 0)
    if mode in ("nearest", "nearest-exact") and input.ndim in (3, 4):
        op = {
            ("nearest", 3): nearest1d,
            ("nearest", 4): nearest2d,
            ("nearest-exact", 3): nearest_exact1d,
            ("nearest-exact", 4): nearest_exact2d,
        }[(mode, input.ndim)]
        return op(input, output_size, *factors)
    if mode == "bilinear" and input.ndim == 4:
        return bilinear2d(input, output_size, align_corners, *factors)
    if mode == "area" and input.ndim == 4:
        return adaptive_avg_pool2d(input, output_size)
    if mode == "bilinear" and input.ndim == 3:
        raise NotImplementedError("Got 3D input, but bilinear mode needs 4D input")
    known = mode in ("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area", "nearest-exact")
    if known and input.ndim in (3, 4, 5):
        raise NotImplementedError(f"interpolate mode '{mode}' for {input.ndim}D input is not implemented in ember")
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the modes: {_MODES} "
        f"(got {mode})"
    )
