"""Memory formats: ``ember.contiguous_format``, ``channels_last``, ``channels_last_3d``, ``preserve_format``.

A memory format names an order of the dimensions in memory. ``contiguous_format`` is row-major;
``channels_last`` lays a 4-D (N, C, H, W) tensor out as N, H, W, C (strides grow along C, W, H, N) and
``channels_last_3d`` a 5-D (N, C, D, H, W) one as N, D, H, W, C. ``preserve_format`` is not a layout but
a request: keep the source's strides when they are dense, else take the format they suggest.

The formats are strings underneath, so kernels and schemas compare them by name; they print as
PyTorch's objects do. Only metadata lives here (no tensors), so the layout code of every op family can
use it.
"""

from __future__ import annotations

from ember.core.api import public
from ember.core.layout import contiguous_strides

__all__ = [
    "channels_last",
    "channels_last_3d",
    "contiguous_format",
    "is_contiguous_as",
    "memory_format",
    "memory_format_of",
    "memory_format_strides",
    "preserve_format",
]


class memory_format(str):
    def __repr__(self) -> str:
        return f"ember.{str.__str__(self)}"


preserve_format = public("preserve_format")(memory_format("preserve_format"))
contiguous_format = public("contiguous_format")(memory_format("contiguous_format"))
channels_last = public("channels_last")(memory_format("channels_last"))
channels_last_3d = public("channels_last_3d")(memory_format("channels_last_3d"))
# PyTorch keeps this name for old serialized modules; it lays tensors out as contiguous_format does.
legacy_contiguous_format = public("legacy_contiguous_format")(memory_format("contiguous_format"))

LAYOUT_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d")
# The order in which a channels-last layout's strides grow, innermost first.
_ORDER = {"channels_last": (1, 3, 2, 0), "channels_last_3d": (1, 4, 3, 2, 0)}
_RANK = {"channels_last": 4, "channels_last_3d": 5}


def check_format(memory_format, ndim: int, op: str) -> str:
    """``memory_format`` as a layout name, refusing what ``op`` cannot lay a rank-``ndim`` tensor out as."""
    if memory_format is None or memory_format == "preserve_format":
        return "preserve_format"
    if not isinstance(memory_format, str) or memory_format not in LAYOUT_FORMATS:
        raise RuntimeError(f"{op}: unsupported memory format {memory_format!r}")
    rank = _RANK.get(memory_format)
    if rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format} format")
    return str.__str__(memory_format)


def _channels_last_like(shape: tuple, stride: tuple, order: tuple) -> bool:
    """PyTorch's ``is_channels_last_strides_{2,3}d``: strides grow along ``order``, channels innermost."""
    if stride[1] == 0:
        return False
    smallest = 0
    for d in order:
        if shape[d] == 0 or stride[d] < smallest:
            return False
        # N111 (and a sliced N11W) is ambiguous; PyTorch calls it contiguous.
        if d == 0 and smallest == stride[1]:
            return False
        smallest = stride[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def memory_format_of(shape: tuple, stride: tuple) -> str:
    """The format PyTorch suggests for a tensor of this shape and these strides."""
    if len(shape) == 4 and _channels_last_like(shape, stride, _ORDER["channels_last"]):
        return "channels_last"
    if len(shape) == 5 and _channels_last_like(shape, stride, _ORDER["channels_last_3d"]):
        return "channels_last_3d"
    return "contiguous_format"


def memory_format_strides(shape: tuple, memory_format: str) -> tuple:
    """The strides of a dense tensor of ``shape`` in ``memory_format`` (a layout, not preserve)."""
    if memory_format == "contiguous_format":
        return contiguous_strides(shape)
    strides = [0] * len(shape)
    running = 1
    for d in _ORDER[memory_format]:
        strides[d] = running
        running *= shape[d]
    return tuple(strides)


def is_contiguous_as(shape: tuple, stride: tuple, memory_format: str) -> bool:
    """``Tensor.is_contiguous(memory_format)`` for a channels-last format: the strides are that
    layout's, dimensions of size 1 aside (their stride is never used)."""
    rank = _RANK[memory_format]
    if len(shape) != rank:
        return False
    expected = 1
    for d in _ORDER[memory_format]:
        if shape[d] != 1:
            if stride[d] != expected:
                return False
            expected *= shape[d]
    return True
