"""``affine_grid`` and ``grid_sample`` (2-D and 3-D, bilinear or nearest, with zeros, border or
reflection padding), composed from the core's ops.

``grid_sample`` unnormalizes the grid's ``[-1, 1]`` coordinates to pixel positions (corner pixels'
centres or edges, by ``align_corners``), folds them back by the padding mode, and gathers the
neighbouring pixels from the flattened input; taps outside the input count zero. The gradient with
respect to the grid comes from the interpolation weights, as PyTorch's kernel computes it.
"""

from __future__ import annotations

import warnings
from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import linspace_function, ones_function
from ember.core.aten.pointwise.ternary import where_function as _where
from ember.core.aten.shape.joining import stack
from ember.core.tensor import Tensor

__all__ = ["GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES", "affine_grid", "grid_sample"]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

_DEFAULT_CORNERS_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. See the documentation of grid_sample for details."
)


def _base(steps: int, align_corners: bool, like: Tensor) -> Tensor:
    if steps <= 1:
        return like.new_zeros(max(steps, 0))
    line = linspace_function(-1, 1, steps, dtype=like.dtype, device=like.device)
    return line if align_corners else line * ((steps - 1) / steps)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) of the affine maps ``theta``."""
    if align_corners is None:
        warnings.warn(_DEFAULT_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {tuple(size)}. Got {theta.size()}."
            )
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {tuple(size)}. Got {theta.size()}."
            )
        spatial = size[-3:]
    else:
        raise NotImplementedError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size {size}."
        )
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = size[0]
    # Coordinates in (x, y[, z]) order, the last spatial dim varying fastest, then a column of ones.
    lines = [_base(s, align_corners, theta) for s in reversed(spatial)]
    k = len(spatial)
    shape = tuple(spatial)
    axes = []
    for i, line in enumerate(lines):
        view = [1] * k
        view[k - 1 - i] = line.shape[0]
        axes.append(line.reshape(view).expand(*shape))
    axes.append(ones_function(*shape, dtype=theta.dtype, device=theta.device))
    base = stack(axes, -1).reshape(1, -1, k + 1)
    grid = base.matmul(theta.transpose(1, 2))
    return grid.reshape(n, *shape, k)


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    coord = (coord - low).abs()
    extra = coord.fmod(span)
    flips = (coord / span).floor()
    even = flips.fmod(2) == 0
    return _where(even, extra + low, span - extra + low)


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    return (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2


def _fold(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A pixel position brought inside the input by the padding mode (unchanged for zeros)."""
    if padding_mode == "border":
        coord = coord.clamp(0, size - 1)
    elif padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        coord = coord.clamp(0, size - 1)
    return coord


def _source(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    return _fold(_unnormalize(coord, size, align_corners), size, padding_mode, align_corners)


_A = -0.75


def _cubic_coefficients(t: Tensor) -> list[Tensor]:
    """The weights of taps ``-1, 0, 1, 2`` at fractional offsets ``t`` (PyTorch's ``A = -0.75``)."""

    def near(x: Tensor) -> Tensor:
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(flat: Tensor, grid: Tensor, sizes: list[int], padding_mode: str, align_corners: bool) -> Tensor:
    n = grid.shape[0]
    coords = [_unnormalize(grid[..., i].reshape(n, -1), sizes[i], align_corners) for i in range(2)]
    lows = [coord.floor() for coord in coords]
    weights = [_cubic_coefficients(coord - low) for coord, low in zip(coords, lows, strict=True)]
    out = None
    for j in range(4):
        y = _fold(lows[1] + (j - 1), sizes[1], padding_mode, align_corners)
        for i in range(4):
            x = _fold(lows[0] + (i - 1), sizes[0], padding_mode, align_corners)
            values, inside = _tap(flat, [x, y], sizes)
            term = values * inside * (weights[0][i] * weights[1][j]).unsqueeze(1)
            out = term if out is None else out + term
    return out


def _tap(flat: Tensor, coords: list[Tensor], sizes: list[int]) -> tuple[Tensor, Tensor]:
    """The input values at integer positions ``coords`` (x, y[, z], each ``(N, P)``), and 1 where they lie inside."""
    inside = None
    index = None
    stride = 1
    for coord, size in zip(coords, sizes, strict=True):
        ok = (coord >= 0) & (coord <= size - 1)
        inside = ok if inside is None else inside & ok
        part = coord.clamp(0, size - 1) * stride
        index = part if index is None else index + part
        stride *= size
    index = index.to(D.int64)
    n, c = flat.shape[0], flat.shape[1]
    values = flat.gather(2, index.unsqueeze(1).expand(n, c, index.shape[1]))
    return values, inside.unsqueeze(1).to(flat.dtype)


def grid_sample(
    input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool | None = None
) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) at the grid's ``(x, y[, z])`` positions
    ``(N, Ho, Wo, 2)`` (or ``(N, Do, Ho, Wo, 3)``) in ``[-1, 1]``."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: "
            f"'{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(_DEFAULT_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if mode == "bicubic" and input.dim() == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dim() not in (4, 5) or grid.dim() != input.dim() or grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(
            f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got input with "
            f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    n, c = input.shape[0], input.shape[1]
    k = input.dim() - 2
    sizes = list(reversed(input.shape[2:]))  # (W, H[, D]): the grid's coordinate order
    out_shape = tuple(grid.shape[1:-1])
    flat = input.reshape(n, c, -1)
    coords = [_source(grid[..., i].reshape(n, -1), sizes[i], padding_mode, align_corners) for i in range(k)]
    if mode == "bicubic":
        return _bicubic(flat, grid, sizes, padding_mode, align_corners).reshape(n, c, *out_shape)
    if mode == "nearest":
        values, inside = _tap(flat, [coord.round() for coord in coords], sizes)
        return (values * inside).reshape(n, c, *out_shape)
    lows = [coord.floor() for coord in coords]
    fractions = [coord - low for coord, low in zip(coords, lows, strict=True)]
    out = None
    for corner in range(2**k):
        taps, weight = [], None
        for i in range(k):
            upper = (corner >> i) & 1
            taps.append(lows[i] + upper)
            w = fractions[i] if upper else 1 - fractions[i]
            weight = w if weight is None else weight * w
        values, inside = _tap(flat, taps, sizes)
        term = values * inside * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_shape)
