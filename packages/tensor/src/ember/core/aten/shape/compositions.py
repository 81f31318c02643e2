"""Shape composites PyTorch builds from views, flips and cat: ``broadcast_to``, ``rot90``, ``diag``,
``block_diag``, ``meshgrid``, ``cartesian_prod``, ``atleast_{1,2,3}d`` and the splits ``tensor_split``,
``hsplit``, ``vsplit``, ``dsplit`` (tuples of slices).

Each is a decomposition (autograd, vmap and every mode see its parts), in PyTorch's construction so
that strides and aliasing come out as PyTorch's do: ``broadcast_to`` and ``meshgrid`` are views,
``rot90`` a flip and a transpose, ``diag`` of a vector a masked select of the vector against zeros.
"""

from __future__ import annotations

import itertools
import warnings

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.aten.shape.joining import _at_least, cat, stack
from ember.core.dispatch import define, ops
from ember.core.layout import normalize_dim
from ember.core.pointwise import type_name
from ember.core.promotion import promote_types
from ember.core.reduction import fit_out
from ember.core.tensor import Tensor

aten = ops.aten


def _write(out: Tensor, result: Tensor) -> Tensor:
    fit_out(out, result)
    return out.copy_(result)


# -- broadcast_to ------------------------------------------------------------------------------------------

broadcast_to = define("broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)")
broadcast_to.register_decomposition(lambda self, size: aten.expand.default(self, list(size)))


@public("broadcast_to")
def _broadcast_to_function(input: Tensor, size) -> Tensor:
    return broadcast_to(input, tuple(size))


@method("broadcast_to")
def _broadcast_to_method(self: Tensor, *size) -> Tensor:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return broadcast_to(self, tuple(size))


# -- rot90 -------------------------------------------------------------------------------------------------

rot90 = define("rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor")


@rot90.register_decomposition
def _rot90(self: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == self.ndim:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    d0, d1 = normalize_dim(dims[0], self.ndim), normalize_dim(dims[1], self.ndim)
    k %= 4
    if k == 1:
        return self.flip([d1]).transpose(d0, d1)
    if k == 2:
        return self.flip([d0, d1])
    if k == 3:
        return self.flip([d0]).transpose(d0, d1)
    return aten.clone.default(self, memory_format="contiguous_format")


@public("rot90")
def _rot90_function(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    return rot90(input, k, list(dims))


method("rot90")(_rot90_function)


# -- diag --------------------------------------------------------------------------------------------------

diag = define("diag(Tensor self, int diagonal=0) -> Tensor")
diag_out = define("diag.out(Tensor self, int diagonal=0, *, Tensor(a!) out) -> Tensor(a!)", ("out",))


@diag.register_decomposition
def _diag(self: Tensor, diagonal: int = 0) -> Tensor:
    if self.ndim == 2:
        return aten.clone.default(self.diagonal(diagonal), memory_format="contiguous_format")
    if self.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
    shift = abs(diagonal)
    n = self._shape[0] + shift
    # Entry (i, j) lies on the diagonal when j - i == diagonal; it holds the vector's element of
    # its row (above the main diagonal) or of its column (below it), zero-padded to length n.
    padded = cat([self, aten.zeros.default([shift], dtype=self.dtype, device=self.device)], 0)
    index = aten.arange.start_step(0, n, 1, dtype=D.int64, device=self.device)
    mask = (index.unsqueeze(0) - index.unsqueeze(1)) == diagonal
    values = padded.unsqueeze(1) if diagonal >= 0 else padded.unsqueeze(0)
    zeros = aten.zeros.default([], dtype=self.dtype, device=self.device)
    return aten.where.self(mask, values, zeros)


diag_out.register_decomposition(lambda self, diagonal=0, *, out: _write(out, _diag(self, diagonal)))


@public("diag")
def _diag_function(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    return diag(input, diagonal) if out is None else diag_out(input, diagonal, out=out)


@method("diag")
def _diag_method(self: Tensor, diagonal: int = 0) -> Tensor:
    return diag(self, diagonal)


# -- block_diag --------------------------------------------------------------------------------------------

block_diag = define("block_diag(Tensor[] tensors) -> Tensor")


@block_diag.register_decomposition
def _block_diag(tensors) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        from ember.core.promotion import get_default_dtype

        return aten.zeros.default([1, 0], dtype=get_default_dtype())
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {t.ndim} dimensions"
            )
        blocks.append(t.reshape((1, 1)) if t.ndim == 0 else t.reshape((1, t._shape[0])) if t.ndim == 1 else t)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = promote_types(dtype, b.dtype)
    device = blocks[0].device
    total = sum(b._shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b._shape
        before = aten.zeros.default([r, left], dtype=dtype, device=device)
        after = aten.zeros.default([r, total - left - c], dtype=dtype, device=device)
        rows.append(cat([before, b.to(dtype), after], 1))
        left += c
    return cat(rows, 0)


@public("block_diag")
def _block_diag_function(*tensors: Tensor) -> Tensor:
    return block_diag(list(tensors))


# -- meshgrid and cartesian_prod ---------------------------------------------------------------------------

meshgrid = define("meshgrid(Tensor[] tensors) -> Tensor[]")
meshgrid_indexing = define("meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]")


def _meshgrid(tensors, indexing: str = "ij") -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if any(t.device != tensors[0].device for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:  # xy is ij with the first two inputs, and then the first two outputs, swapped
        tensors[0], tensors[1] = tensors[1], tensors[0]
    sizes = [t.numel() for t in tensors]
    grids = []
    for i, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[i] = sizes[i]
        grids.append(t.reshape(tuple(view)).expand(tuple(sizes)))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return grids


meshgrid.register_decomposition(lambda tensors: _meshgrid(tensors))
meshgrid_indexing.register_decomposition(lambda tensors, *, indexing: _meshgrid(tensors, indexing))


@public("meshgrid")
def _meshgrid_function(*tensors, indexing: str | None = None) -> tuple:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
            UserWarning,
            stacklevel=2,
        )
        return tuple(meshgrid(list(tensors)))
    return tuple(meshgrid_indexing(list(tensors), indexing=indexing))


cartesian_prod = define("cartesian_prod(Tensor[] tensors) -> Tensor")


@cartesian_prod.register_decomposition
def _cartesian_prod(tensors) -> Tensor:
    tensors = list(tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _meshgrid(tensors, "ij")
    return stack([g.flatten() for g in grids], 1)


@public("cartesian_prod")
def _cartesian_prod_function(*tensors: Tensor) -> Tensor:
    return cartesian_prod(list(tensors))


# -- atleast_1d, atleast_2d, atleast_3d ----------------------------------------------------------------------


def _atleast(n: int):
    single = define(f"atleast_{n}d(Tensor self) -> Tensor")
    sequence = define(f"atleast_{n}d.Sequence(Tensor[] tensors) -> Tensor[]")
    single.register_decomposition(lambda self: _at_least(self, n))
    sequence.register_decomposition(lambda tensors: [_at_least(t, n) for t in tensors])

    def function(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], Tensor):
            return single(tensors[0])
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        return tuple(sequence(list(tensors)))

    function.__name__ = function.__qualname__ = f"atleast_{n}d"
    public(f"atleast_{n}d")(function)
    return single, sequence


atleast_1d, atleast_1d_sequence = _atleast(1)
atleast_2d, atleast_2d_sequence = _atleast(2)
atleast_3d, atleast_3d_sequence = _atleast(3)


# -- tensor_split, hsplit, vsplit, dsplit --------------------------------------------------------------------

tensor_split_sections = define("tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]")
tensor_split_indices = define("tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]")
tensor_split_tensor = define(
    "tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) "
    "-> Tensor(a)[]"
)


def _need_dims(self: Tensor) -> None:
    if self.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")


def _slices(self: Tensor, dim: int, bounds: list) -> list:
    # Each piece is self[start:end] along dim, clamped to the size as slicing clamps.
    size = self._shape[dim]
    pieces = []
    for start, end in itertools.pairwise(bounds):
        start = min(max(start, 0), size)
        end = min(max(end, start), size)
        pieces.append(aten.slice.Tensor(self, dim, start, end))
    return pieces


@tensor_split_sections.register_decomposition
def _tensor_split_sections(self: Tensor, sections, dim: int = 0) -> list:
    _need_dims(self)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    dim = normalize_dim(dim, self.ndim)
    size = self._shape[dim]
    small, extra = size // sections, size % sections
    bounds, start = [0], 0
    for i in range(sections):
        start += small + (1 if i < extra else 0)
        bounds.append(start)
    return _slices(self, dim, bounds)


@tensor_split_indices.register_decomposition
def _tensor_split_indices(self: Tensor, indices, dim: int = 0) -> list:
    _need_dims(self)
    dim = normalize_dim(dim, self.ndim)
    return _slices(self, dim, [0, *indices, self._shape[dim]])


@tensor_split_tensor.register_decomposition
def _tensor_split_tensor(self: Tensor, tensor_indices_or_sections: Tensor, dim: int = 0) -> list:
    _need_dims(self)
    split = tensor_indices_or_sections
    if split.device.type != "cpu":
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be on cpu, but it's on {split.device}")
    if split.dtype is not D.int64:
        raise RuntimeError(
            f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got {type_name(split.dtype)}"
        )
    if split.ndim > 1:
        raise RuntimeError(
            "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional "
            f"tensor, but got a tensor with {split.ndim} dims"
        )
    if split.ndim == 0:
        return _tensor_split_sections(self, int(split), dim)
    return _tensor_split_indices(self, [int(i) for i in split.tolist()], dim)


@public("tensor_split")
def _tensor_split_function(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    if isinstance(indices_or_sections, Tensor):
        return tuple(tensor_split_tensor(input, indices_or_sections, dim))
    if isinstance(indices_or_sections, (list, tuple)):
        return tuple(tensor_split_indices(input, list(indices_or_sections), dim))
    return tuple(tensor_split_sections(input, indices_or_sections, dim))


method("tensor_split")(_tensor_split_function)


def _directional_split(name: str, dim_of, min_dims: int):
    def function(input: Tensor, indices_or_sections) -> tuple:
        if input.ndim < min_dims:
            raise RuntimeError(
                f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                f"{input.ndim} dimensions!"
            )
        dim = dim_of(input)
        if isinstance(indices_or_sections, (list, tuple)):
            return tuple(tensor_split_indices(input, list(indices_or_sections), dim))
        size = input._shape[dim]
        sections = indices_or_sections
        if sections == 0 or size % sections != 0:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension {size} "
                f"is not divisible by the split_size {sections}!"
            )
        return tuple(tensor_split_sections(input, sections, dim))

    function.__name__ = function.__qualname__ = name
    public(name)(function)
    method(name)(function)


_directional_split("hsplit", lambda t: 0 if t.ndim == 1 else 1, 1)
_directional_split("vsplit", lambda t: 0, 2)
_directional_split("dsplit", lambda t: 2, 3)
