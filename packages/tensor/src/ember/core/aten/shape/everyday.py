"""Shape and indexing functions PyTorch builds from views, gathers and products: ``broadcast_tensors``,
``diag_embed``, ``diagflat``, ``tensordot``, ``inner``, ``narrow_copy``, ``ravel``, ``repeat_interleave``,
``isin``, ``unravel_index``, ``combinations``, ``tril_indices``/``triu_indices``, ``index_reduce`` and
PyTorch's aliases of existing ones (``row_stack``, ``split_with_sizes``, the ``unsafe_`` splits).

All are written over existing ops (autograd, vmap and every mode see the parts). ``tril_indices`` and
``triu_indices`` are factories of index values known from their integer arguments alone.
"""

from __future__ import annotations

import itertools
import math

from ember.core import dtypes as D
from ember.core.api import functions, method, public
from ember.core.layout import normalize_dim
from ember.core.reduction import fit_out
from ember.core.tensor import Tensor


def _tensor(data, **kwargs) -> Tensor:
    from ember.core.creation import tensor  # creation imports the op families

    return tensor(data, **kwargs)


def _fn(name: str):
    return functions[name]


# -- broadcasting, ravel, narrow_copy ----------------------------------------------------------------------


@public("broadcast_tensors")
def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _fn("broadcast_shapes")(*(t.shape for t in tensors))
    return tuple(t.expand(tuple(shape)) for t in tensors)


@public("ravel")
@method("ravel")
def ravel(input: Tensor) -> Tensor:
    return input.contiguous().reshape(-1)


@public("narrow_copy")
@method("narrow_copy")
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    return input.narrow(dim, start, length).clone(memory_format=_fn("contiguous_format"))


# -- diag_embed, diagflat ----------------------------------------------------------------------------------


@public("diag_embed")
@method("diag_embed")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    ndim = input.ndim + 1
    d1, d2 = normalize_dim(dim1, ndim), normalize_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset) if input.ndim else abs(offset) + 1
    rest = list(input.shape[:-1])
    shape = []
    for d in range(ndim):
        shape.append(n if d in (d1, d2) else rest.pop(0))
    zeros = input.new_zeros(tuple(shape))
    return zeros.diagonal_scatter(input, offset, d1, d2)


@public("diagflat")
@method("diagflat")
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    return _fn("diag")(input.reshape(-1), offset)


# -- tensordot, inner --------------------------------------------------------------------------------------


@public("tensordot")
def tensordot(a: Tensor, b: Tensor, dims=2, out: Tensor | None = None) -> Tensor:
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    dims_a = [normalize_dim(d, a.ndim) for d in dims_a]
    dims_b = [normalize_dim(d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b, strict=True):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                f"and second has size {b.shape[db]} in dim {db}"
            )
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    k = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(math.prod(a.shape[d] for d in free_a), k)
    right = b.permute(dims_b + free_b).reshape(k, math.prod(b.shape[d] for d in free_b))
    result = left.mm(right).reshape(tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))
    if out is not None:
        fit_out(out, result)
        return out.copy_(result)
    return result


@public("inner")
@method("inner")
def inner(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    return tensordot(input, other, ([-1], [-1]))


# -- repeat_interleave -------------------------------------------------------------------------------------


def _repeat_indices(repeats: Tensor, output_size: int | None = None) -> Tensor:
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype not in (D.int32, D.int64):
        raise RuntimeError("repeats has to be Long or Int tensor")
    if repeats.numel() and bool((repeats < 0).any()):
        raise RuntimeError("repeats can not be negative")
    ends = repeats.to(D.int64).cumsum(0)
    total = int(ends[-1]) if repeats.numel() else 0
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    positions = _fn("arange")(total, dtype=D.int64, device=repeats.device)
    return _fn("searchsorted")(ends, positions, right=True).to(repeats.dtype)


@public("repeat_interleave")
@method("repeat_interleave")
def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *, output_size: int | None = None):
    if repeats is None:  # repeat_interleave(repeats): the indices each position repeats
        return _repeat_indices(input, output_size)
    if dim is None:
        input, dim = input.reshape(-1), 0
    dim = normalize_dim(dim, max(input.ndim, 1))
    if input.ndim == 0:
        input = input.reshape(1)
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
        repeats = repeats.reshape(()).item() if repeats.ndim else repeats.item()
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
        shape = list(input.shape)
        expanded = input.unsqueeze(dim + 1).expand(tuple(shape[: dim + 1] + [repeats] + shape[dim + 1 :]))
        return expanded.flatten(dim, dim + 1)
    if repeats.shape[0] != input.shape[dim]:
        raise RuntimeError("repeats must have the same size as input along dim")
    return input.index_select(dim, _repeat_indices(repeats, output_size).to(D.int64))


# -- isin, unravel_index, combinations ---------------------------------------------------------------------


@public("isin")
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expects at least one tensor argument")
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(elements, Tensor):
        elements = _tensor(elements, device=like.device)
    if not isinstance(test_elements, Tensor):
        test_elements = _tensor(test_elements, device=like.device)
    flat = test_elements.reshape(-1)
    if flat.numel():
        found = (elements.unsqueeze(-1) == flat).any(-1)
    else:
        found = elements.new_zeros(tuple(elements.shape), dtype=D.bool_)
    return ~found if invert else found


@public("unravel_index")
def unravel_index(indices: Tensor, shape) -> tuple[Tensor, ...]:
    if not isinstance(indices, Tensor):
        indices = _tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype is D.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    total = math.prod(shape)
    if indices.numel() and (bool((indices < -total).any()) or bool((indices >= total).any())):
        raise ValueError(f"'indices' must be in range [-{total}, {total})")
    flat = indices.to(D.int64)
    flat = functions["where"](flat < 0, flat + total, flat)
    coords = []
    for size in reversed(shape):
        coords.append(flat.remainder(size) if size else flat)
        flat = flat.div(size, rounding_mode="floor") if size else flat
    # PyTorch's coordinates are views into one (..., ndim) tensor.
    return tuple(_fn("stack")(list(reversed(coords)), -1).unbind(-1))


@public("combinations")
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return input.new_empty((0, r))
    index = _tensor(rows, dtype=D.int64, device=input.device)
    return input[index]


# -- tril_indices, triu_indices ----------------------------------------------------------------------------


def _triangle_indices(row: int, col: int, offset: int, lower: bool, dtype, device) -> Tensor:
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else f"col must be non-negative, got{col}")
    pairs = [(i, j) for i in range(row) for j in range(col) if ((j - i <= offset) if lower else (j - i >= offset))]
    dtype = D.int64 if dtype is None else dtype
    if dtype not in (D.int64, D.int32):
        raise RuntimeError('"tril_indices" not implemented for \'' + str(dtype) + "'")
    flat = [i for i, _ in pairs] + [j for _, j in pairs]
    return _tensor(flat, dtype=dtype, device=device).reshape(2, len(pairs))


@public("tril_indices")
def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None, pin_memory=False):
    return _triangle_indices(row, col, offset, True, dtype, device)


@public("triu_indices")
def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None, pin_memory=False):
    return _triangle_indices(row, col, offset, False, dtype, device)


# -- index_reduce ------------------------------------------------------------------------------------------

_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def _index_reduce_expanded(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str):
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    dim = normalize_dim(dim, max(self.ndim, 1))
    shape = [1] * max(source.ndim, 1)
    shape[dim] = index.numel()
    return dim, index.reshape(tuple(shape)).expand(tuple(source.shape))


@public("index_reduce")
@method("index_reduce")
def index_reduce(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    dim, full = _index_reduce_expanded(input, dim, index, source, reduce)
    return input.scatter_reduce(dim, full, source, reduce, include_self=include_self)


@method("index_reduce_")
def _index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, include_self: bool = True):
    dim, full = _index_reduce_expanded(self, dim, index, source, reduce)
    return self.scatter_reduce_(dim, full, source, reduce, include_self=include_self)


# -- aliases -----------------------------------------------------------------------------------------------


@public("row_stack")
def row_stack(tensors, *, out: Tensor | None = None) -> Tensor:
    return _fn("vstack")(tensors, out=out) if out is not None else _fn("vstack")(tensors)


@public("split_with_sizes", "unsafe_split_with_sizes")
def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:
    if sum(split_sizes) != input.shape[dim]:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {input.shape[dim]} (input tensor's size at "
            f"dimension {dim}), but got split_sizes={list(split_sizes)}"
        )
    return tuple(input.split(list(split_sizes), dim))


@method("split_with_sizes", "unsafe_split_with_sizes")
def _split_with_sizes_method(self: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:
    return split_with_sizes(self, split_sizes, dim)


@public("unsafe_split")
@method("unsafe_split")
def unsafe_split(input: Tensor, split_size, dim: int = 0) -> tuple[Tensor, ...]:
    return tuple(input.split(split_size, dim))


@public("unsafe_chunk")
@method("unsafe_chunk")
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return tuple(input.chunk(chunks, dim))
