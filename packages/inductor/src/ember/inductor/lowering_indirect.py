"""Lowerings that load through an index read at run time: ``embedding``, ``index_select``, ``gather``
and advanced indexing (``index.Tensor``).

Each is a pointwise box whose loader first loads the index tensor's element, turns it into an index
symbol with ``ops.indirect_indexing`` (negative values count from the end in advanced indexing; an
out-of-range value raises the error eager raises: ``indirect.py``), then loads the indexed tensor there. The boxes fuse like any
pointwise value: an embedding and the ops after it are one kernel, whose inner loop over the embedding
dimension stays contiguous (the row's index is read and checked once per row, ``codegen_cpp._hoist``).

Index tensors of int64 and int32 are taken; boolean masks (whose result size depends on the data) run
as extern calls of their eager kernel.
"""

from __future__ import annotations

from typing import Any

import sympy

from ember.core import dtypes as D
from ember.inductor.indirect import ADVANCED, EMBEDDING, GATHER, error_code
from ember.inductor.ir import Index, TensorBox
from ember.inductor.lowering import as_loader, broadcast_shapes, make_box, register
from ember.inductor.sizevars import statically_ge
from ember.inductor.virtualized import ops

INDEX_DTYPES = (D.int64, D.int32)


def _check_index(what: str, index: TensorBox) -> None:
    if index.dtype not in INDEX_DTYPES:
        raise NotImplementedError(f"{what} with {index.dtype} indices (only int64 and int32 are generated)")


def _check_size(what: str, n: Any) -> None:
    if isinstance(n, int) and n == 0:
        # every index is out of range, and a kernel has no element 0 to read instead: eager raises
        raise NotImplementedError(f"{what} from an empty dimension")


def indirect(loader: Any, index: Index, size: Any, kind: int, dim: int) -> sympy.Symbol:
    """The index symbol of the value ``loader(index)``, checked against ``size``; negative values count
    from the end in advanced indexing only (embedding, index_select and gather refuse them, as eager)."""
    return ops.indirect_indexing(loader(index), size, True, kind == ADVANCED, error_code(kind, dim))


@register("embedding.default")
def embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if len(weight.size) != 2:
        raise NotImplementedError("embedding of a weight that is not 2-dimensional")
    _check_index("embedding", indices)
    n = weight.size[0]
    _check_size("embedding", n)
    lw, li = weight.loader, indices.loader
    nd = len(indices.size)

    def loader(i: Index) -> Any:
        row = indirect(li, list(i[:nd]), n, EMBEDDING, 0)
        return lw([row, i[nd]])

    return make_box((*indices.size, weight.size[1]), weight.dtype, loader)


@register("index_select.default")
def index_select(ctx, x, dim, index):
    _check_index("index_select", index)
    if len(index.size) > 1:
        raise RuntimeError("index_select(): Index is supposed to be a vector")
    if not x.size:
        raise NotImplementedError("index_select of a 0-dimensional tensor")
    dim = dim % len(x.size)
    n = x.size[dim]
    _check_size("index_select", n)
    lx, li = x.loader, index.loader
    scalar_index = not index.size

    def loader(i: Index) -> Any:
        src = list(i)
        src[dim] = indirect(li, [] if scalar_index else [i[dim]], n, EMBEDDING, 0)
        return lx(src)

    size = list(x.size)
    size[dim] = index.size[0] if index.size else 1
    return make_box(tuple(size), x.dtype, loader)


@register("gather.default")
def gather(ctx, x, dim, index, *, sparse_grad=False):
    _check_index("gather", index)
    if not x.size or not index.size:
        raise NotImplementedError("gather with a 0-dimensional tensor")
    if len(index.size) != len(x.size):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    dim = dim % len(x.size)
    n = x.size[dim]
    _check_size("gather", n)
    for d, (m, k) in enumerate(zip(x.size, index.size, strict=True)):
        # the other dims are read directly: in bounds only where the index is no larger (the meta kernel
        # checks it; the kernel relies on it, so it is decided here for every size)
        if d != dim and not statically_ge(m, k):
            raise NotImplementedError(f"gather with an index larger than the input at dimension {d}")
    lx, li = x.loader, index.loader

    def loader(i: Index) -> Any:
        src = list(i)
        src[dim] = indirect(li, list(i), n, GATHER, dim)
        return lx(src)

    return make_box(tuple(index.size), x.dtype, loader)


def advanced_geometry(size: tuple, indices: list) -> tuple[list[int], tuple, tuple, bool]:
    """For ``x[indices]`` (a list of index boxes and ``None``): the indexed dims, the broadcast size of
    the index tensors, the result's size, and whether the indexed dims are adjacent (then the broadcast
    dims take their place; else they go first, as in NumPy and PyTorch)."""
    indices = list(indices) + [None] * (len(size) - len(indices))
    dims = [d for d, t in enumerate(indices) if t is not None]
    if not dims:
        raise NotImplementedError("advanced indexing without an index tensor")
    for d in dims:
        if indices[d].dtype in (D.bool_, D.uint8):
            raise NotImplementedError("indexing with a boolean mask (its result size depends on the data)")
        _check_index("advanced indexing", indices[d])
        _check_size("advanced indexing", size[d])
    b = broadcast_shapes(*[indices[d].size for d in dims])
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    rest = [d for d in range(len(size)) if d not in dims]
    if adjacent:
        out = (*size[: dims[0]], *b, *size[dims[-1] + 1 :])
    else:
        out = (*b, *(size[d] for d in rest))
    return dims, b, out, adjacent


def advanced_source(
    x_size: tuple, indices: list, dims: list[int], b: tuple, adjacent: bool, i: Index, kind: int = ADVANCED
) -> Index:
    """The index of ``x`` that element ``i`` of ``x[indices]`` reads (an ``ops`` context is current)."""
    indices = list(indices) + [None] * (len(x_size) - len(indices))
    rest = [d for d in range(len(x_size)) if d not in dims]
    nb = len(b)
    if adjacent:
        start = dims[0]
        bi = list(i[start : start + nb])
        others = list(i[:start]) + list(i[start + nb :])
    else:
        bi, others = list(i[:nb]), list(i[nb:])
    src: list[Any] = [None] * len(x_size)
    for d, v in zip(rest, others, strict=True):
        src[d] = v
    for d in dims:
        t = indices[d]
        src[d] = indirect(as_loader(t, b, t.dtype), bi, x_size[d], kind, d)
    return src


@register("index.Tensor")
def index(ctx, x, indices):
    if len(indices) > len(x.size):
        raise IndexError(f"too many indices for tensor of dimension {len(x.size)} (got {len(indices)})")
    dims, b, out, adjacent = advanced_geometry(x.size, indices)
    lx, size = x.loader, x.size

    def loader(i: Index) -> Any:
        return lx(advanced_source(size, indices, dims, b, adjacent, i))

    return make_box(out, x.dtype, loader)
