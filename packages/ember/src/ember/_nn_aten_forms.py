"""ATen's top-level forms of functions that ``nn.functional`` offers with friendlier arguments:
``embedding_bag`` (the mode as an int, four outputs), ``grid_sampler``/``grid_sampler_2d``/
``grid_sampler_3d`` (modes as ints), ``affine_grid_generator``, the generic ``convolution``, ``conv_tbc`` (nn.functional's) and
``feature_dropout``. Each checks its arguments as ATen does and calls the functional form.
"""

from __future__ import annotations

from collections.abc import Sequence

import ember
from ember.autograd import no_grad
from ember.core import dtypes as D
from ember.core.aten.nn.convolution import convolution as _convolution_op
from ember.core.tensor import Tensor
from ember.nn.functional import affine_grid, conv3d, conv_transpose3d, grid_sample
from ember.nn.functional import conv_tbc as conv_tbc
from ember.nn.functional import embedding_bag as _embedding_bag

__all__ = [
    "affine_grid_generator",
    "conv_tbc",
    "convolution",
    "embedding_bag",
    "feature_dropout",
    "feature_dropout_",
    "grid_sampler",
    "grid_sampler_2d",
    "grid_sampler_3d",
]

_BAG_MODES = ("sum", "mean", "max")
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


# -- embedding_bag ---------------------------------------------------------------------------------


def _index_dtype_check(t: Tensor, position: int, name: str) -> None:
    if t.dtype not in (D.int64, D.int32):
        raise RuntimeError(
            f"Expected tensor for argument #{position} '{name}' to have one of the following scalar types: Long, "
            f"Int; but got {t.dtype} instead (while checking arguments for embedding_bag)"
        )


def _skips_offset2bag(weight: Tensor, mode: int, padding_idx: int | None, per_sample_weights) -> bool:
    """Whether PyTorch's CPU kernel takes its fused path, which leaves ``offset2bag`` empty: sums
    without a padding index over float32/half rows stored contiguously."""
    if mode != 0 or padding_idx is not None or weight.dtype not in (D.float32, D.float16, D.bfloat16):
        return False
    if weight.stride(1) != 1:
        return False
    return per_sample_weights is None or per_sample_weights.stride(0) == 1


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(output, offset2bag, bag_size, max_indices)``: the bags' sums (``mode=0``), means (1) or
    maxima (2) of the rows of ``weight`` that the 1-D ``indices`` pick, bag ``i`` starting at
    ``offsets[i]``.

    ``offset2bag`` is each index's bag (empty where PyTorch's CPU kernel skips it: sums over float32 or
    half weights without a padding index), ``bag_size`` each bag's count of non-padding indices (zeros
    for sums), ``max_indices`` the row each maximum came from, ``(bags, dim)`` (for sums zeros and for
    means ``bag_size``, as PyTorch's). The auxiliary outputs have the indices' dtype.
    """
    _index_dtype_check(indices, 1, "indices")
    _index_dtype_check(offsets, 2, "offsets")
    if isinstance(mode, bool) or mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if per_sample_weights is not None and mode != 0:
        raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
    if weight.dim() != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if indices.dim() != 1 or offsets.dim() != 1:
        raise RuntimeError(
            f"embedding_bag: expected 1-D indices and offsets, got {indices.dim()}-D and {offsets.dim()}-D"
        )
    num_weights = weight.shape[0]
    if padding_idx is not None:
        if not -num_weights <= padding_idx < num_weights:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, -{num_weights} through {num_weights - 1}"
            )
        padding_idx %= num_weights
    index_dtype = D.int64 if D.int64 in (indices.dtype, offsets.dtype) else D.int32
    indices, offsets = indices.to(index_dtype), offsets.to(index_dtype)
    n = indices.shape[0]
    starts = offsets[:-1] if include_last_offset else offsets
    bags = starts.shape[0]
    if n and bool((indices < 0).any() | (indices >= num_weights).any()):
        raise RuntimeError(f"embedding_bag: an index is out of range for {num_weights} embeddings")
    output = _embedding_bag(
        indices,
        weight,
        offsets,
        scale_grad_by_freq=scale_grad_by_freq,
        mode=_BAG_MODES[mode],
        sparse=sparse,
        per_sample_weights=per_sample_weights,
        include_last_offset=include_last_offset,
        padding_idx=padding_idx,
    )
    with no_grad():
        positions = ember.arange(n, device=indices.device, dtype=index_dtype)
        bag = ember.searchsorted(starts.contiguous(), positions, right=True) - 1
        counted = bag if padding_idx is None else bag[indices != padding_idx]
        sizes = ember.zeros(bags, dtype=index_dtype, device=indices.device)
        if mode != 0:
            sizes = sizes.index_add(0, counted, ember.ones_like(counted))
        if mode == 2:
            max_indices = _max_rows(weight, indices, bag, bags, output, padding_idx)
        else:
            max_indices = sizes.clone()
        if _skips_offset2bag(weight, mode, padding_idx, per_sample_weights):
            offset2bag = ember.empty(0, dtype=index_dtype, device=indices.device)
        else:
            offset2bag = bag.to(index_dtype)
    return output, offset2bag, sizes, max_indices


def _max_rows(weight: Tensor, indices: Tensor, bag: Tensor, bags: int, output: Tensor, padding_idx) -> Tensor:
    """For each bag and column, the row of ``weight`` the maximum came from: the first that holds it
    (0 for an empty bag)."""
    n, dim = indices.shape[0], weight.shape[1]
    rows = weight.detach()[indices]
    hits = rows == output.detach()[bag.clamp(max=max(bags - 1, 0))] if bags else rows != rows
    if padding_idx is not None:
        hits = hits & (indices != padding_idx).unsqueeze(1)
    position = ember.arange(n, device=indices.device).unsqueeze(1).expand(n, dim)
    candidate = ember.where(hits, position, ember.full_like(position, n))
    first = ember.full((bags + 1, dim), n, dtype=D.int64, device=indices.device)
    first = first.scatter_reduce(0, bag.to(D.int64).unsqueeze(1).expand(n, dim), candidate, "amin")[:bags]
    padded = ember.cat([indices, indices.new_zeros(1)])
    return padded[first.clamp(max=n)]


# -- grid sampling ---------------------------------------------------------------------------------


def _modes(interpolation_mode: int, padding_mode: int) -> tuple[str, str]:
    if isinstance(interpolation_mode, bool) or interpolation_mode not in (0, 1, 2):
        raise RuntimeError(
            f"grid_sampler(): interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got "
            f"{interpolation_mode}"
        )
    if isinstance(padding_mode, bool) or padding_mode not in (0, 1, 2):
        raise RuntimeError(
            f"grid_sampler(): padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got {padding_mode}"
        )
    return _INTERPOLATIONS[interpolation_mode], _PADDINGS[padding_mode]


def _check_grid(input: Tensor, grid: Tensor, interpolation_mode: int, dims: tuple[int, ...]) -> None:
    """ATen's checks, in ATen's order: batch, the grid's last size, the ranks, bicubic in 3-D, dtypes."""
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got grid with "
            f"sizes {list(grid.shape)}"
        )
    if input.dim() not in dims or grid.dim() != input.dim():
        wanted = "4D or 5D" if len(dims) == 2 else f"{dims[0]}D"
        raise RuntimeError(
            f"grid_sampler(): expected {wanted} input and grid with same number of dimensions, but got input with "
            f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if interpolation_mode == 2 and input.dim() == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have the same dtype, got {input.dtype} and {grid.dtype}"
        )
    if not input.is_floating_point():
        raise NotImplementedError(f'"grid_sampler" not implemented for {input.dtype}')


def _sample(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool, dims):
    mode, padding = _modes(interpolation_mode, padding_mode)
    _check_grid(input, grid, interpolation_mode, dims)
    return grid_sample(input, grid, mode=mode, padding_mode=padding, align_corners=bool(align_corners))


def grid_sampler(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``grid_sample`` with ATen's int codes: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection. 4-D or 5-D input."""
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners, (4, 5))


def grid_sampler_2d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``grid_sampler`` for 4-D input ``(N, C, H, W)`` only."""
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners, (4,))


def grid_sampler_3d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``grid_sampler`` for 5-D input ``(N, C, D, H, W)`` only (bilinear or nearest)."""
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners, (5,))


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """The sampling grid of the affine maps ``theta`` ``(N, 2, 3)`` (or ``(N, 3, 4)``) for an output of
    ``size`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``)."""
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    k = len(size) - 2
    if theta.dim() != 3:
        raise RuntimeError(f"affine_grid_generator: expected theta of 3 dimensions, got {theta.dim()}")
    got, expected = [theta.shape[0], theta.shape[2]], [size[0], k + 1]
    if got != expected:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {expected} but got: {got}.")
    if theta.shape[1] != k:
        raise RuntimeError(f"affine_grid_generator: expected theta of shape (N, {k}, {k + 1}), got {list(theta.shape)}")
    return affine_grid(theta, size, align_corners=bool(align_corners))


# -- convolution -----------------------------------------------------------------------------------


def convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    """The convolution every ``conv*`` reduces to: 1-, 2- or 3-D, plain or transposed, grouped."""
    stride, padding, dilation, output_padding = (list(v) for v in (stride, padding, dilation, output_padding))
    if input.dim() == 5:
        # The core's convolution kernel covers 1-D and 2-D; nn.functional composes the 3-D ones.
        if transposed:
            return conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)
        return conv3d(input, weight, bias, stride, padding, dilation, groups)
    return _convolution_op(input, weight, bias, stride, padding, dilation, bool(transposed), output_padding, groups)


# -- feature dropout -------------------------------------------------------------------------------


def _feature_mask(input: Tensor, p: float, train: bool) -> Tensor | None:
    """The scaled keep mask, one draw per (sample, channel); None when nothing is dropped."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0 or input.numel() == 0:
        return None
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = (*input.shape[:2], *([1] * (input.dim() - 2)))
    with no_grad():
        if p == 1:
            return ember.zeros(shape, dtype=input.dtype, device=input.device)
        return ember.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p).div_(1 - p)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels (dimension 1) with probability ``p`` and scale the rest by ``1/(1-p)``."""
    mask = _feature_mask(input, p, train)
    return input if mask is None else input * mask


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``feature_dropout`` in place."""
    mask = _feature_mask(input, p, train)
    return input if mask is None else input.mul_(mask)
