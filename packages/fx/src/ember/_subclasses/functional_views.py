"""How functionalization replays a view and writes a mutated view back into its base.

A ``ViewMeta`` records one view op with its arguments. ``forward(base)`` makes the view again from
a (newer) base: the view op itself when views are kept (``remove="mutations"``), its ``*_copy`` op
when they are removed. ``reverse(base, mutated)`` gives the base in which the view's region holds
``mutated``: the inverse view where the view is a bijection (``view``, ``transpose``, ``permute``,
``unsqueeze``...), a scatter where it selects a region (``slice_scatter``, ``select_scatter``,
``diagonal_scatter``, ``as_strided_scatter``), the base plus the summed changes where it broadcast
(``expand``). These are
PyTorch's view inverses, so the graphs functionalization makes have PyTorch's ops.

Both run the ops through ``call``, which the functionalization level gives: ops called there reach
the levels below functionalization (autograd, tracing, vmap) as ordinary ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.aten.shape.view_copies import copy_of_view
from ember.core.dispatch import OpOverload, ops
from ember.core.layout import normalize_dim

aten = ops.aten

Call = Callable[..., Any]


class ViewMeta:
    """One view op of a tensor's chain from its storage's base: ``op(base, *args, **kwargs)[out_index]``."""

    __slots__ = ("args", "is_as_strided", "kwargs", "op", "out_index", "reapply")

    def __init__(self, op: OpOverload, args: tuple, kwargs: dict, out_index: int | None, reapply: bool) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.out_index = out_index
        self.reapply = reapply
        self.is_as_strided = op is aten.as_strided.default

    def forward(self, call: Call, base: Any) -> Any:
        op = self.op if self.reapply else copy_of_view[self.op]
        out = call(op, (base, *self.args), self.kwargs)
        return out if self.out_index is None else out[self.out_index]

    def reverse(self, call: Call, base: Any, mutated: Any) -> Any:
        inverse = _INVERSES.get(self.op)
        if inverse is None:
            raise NotImplementedError(
                f"functionalize: a mutation through a view made by {self.op} cannot be written back to its base"
            )
        return inverse(_Inverse(call, self.reapply), base, mutated, self)

    def __repr__(self) -> str:
        return f"ViewMeta({self.op}, {self.args}, {self.kwargs}, out_index={self.out_index})"


class _Inverse:
    """The ops an inverse calls: a view op, or its copy when views are removed."""

    def __init__(self, call: Call, reapply: bool) -> None:
        self.call = call
        self.reapply = reapply

    def view(self, op: OpOverload, *args: Any) -> Any:
        return self.call(op if self.reapply else copy_of_view[op], args, {})

    def __call__(self, op: OpOverload, *args: Any) -> Any:
        return self.call(op, args, {})


def _bound(meta: ViewMeta, names: tuple[str, ...]) -> list:
    """The view's arguments after ``self``, with the schema's defaults filled in."""
    schema_args = meta.op.schema.arguments[1:]
    given = dict(zip([a.name for a in schema_args], meta.args, strict=False)) | meta.kwargs
    return [given[n] if n in given else next(a.default for a in schema_args if a.name == n) for n in names]


def _view_inverse(f: _Inverse, base, mutated, meta):
    return f.view(aten.view.default, mutated, list(base.shape))


def _view_dtype_inverse(f: _Inverse, base, mutated, meta):
    return f.view(aten.view.dtype, mutated, base.dtype)


def _same_inverse(op: OpOverload) -> Callable:
    def inverse(f: _Inverse, base, mutated, meta):
        return f.view(op, mutated, *meta.args)

    return inverse


def _alias_inverse(op: OpOverload) -> Callable:
    def inverse(f: _Inverse, base, mutated, meta):
        return f.view(op, mutated)

    return inverse


def _detach_inverse(f: _Inverse, base, mutated, meta):
    return mutated  # PyTorch writes no op: the mutated value is the base's


def _permute_inverse(f: _Inverse, base, mutated, meta):
    (dims,) = _bound(meta, ("dims",))
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[normalize_dim(d, n)] = i
    return f.view(aten.permute.default, mutated, inverse)


def _expand_inverse(f: _Inverse, base, mutated, meta):
    # PyTorch's inverse: ``base + sum_to(mutated - base)``. Summing ``mutated`` alone would add every
    # copy of each element (a write through one row of the expand would count the other rows again);
    # summing the changes keeps the elements that were not written, and matches PyTorch's graphs.
    shape = tuple(base.shape)
    delta = f(aten.sub.Tensor, mutated, base)
    lead = mutated.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1 and mutated.shape[lead + i] != 1]
    if dims:
        delta = f(aten.sum.dim_IntList, delta, dims, True)
        if lead:
            delta = f.view(aten.view.default, delta, list(shape))
    return f(aten.add.Tensor, base, delta)


def _squeeze_inverse(f: _Inverse, base, mutated, meta):
    shape = tuple(base.shape)
    if meta.op in (aten.squeeze.dims, aten.squeeze.dim):
        (dims,) = _bound(meta, ("dim",))
        dims = [dims] if meta.op is aten.squeeze.dim else dims
        dims = sorted({normalize_dim(d, len(shape)) for d in dims} if shape else ())
    else:
        dims = list(range(len(shape)))
    out = mutated
    for d in dims:
        if shape[d] == 1:
            out = f.view(aten.unsqueeze.default, out, d)
    return out


def _unsqueeze_inverse(f: _Inverse, base, mutated, meta):
    (dim,) = _bound(meta, ("dim",))
    return f.view(aten.squeeze.dim, mutated, dim)


def _select_inverse(f: _Inverse, base, mutated, meta):
    dim, index = _bound(meta, ("dim", "index"))
    return f(aten.select_scatter.default, base, mutated, dim, index)


def _slice_inverse(f: _Inverse, base, mutated, meta):
    dim, start, end, step = _bound(meta, ("dim", "start", "end", "step"))
    return f(aten.slice_scatter.default, base, mutated, dim, start, end, step)


def _diagonal_inverse(f: _Inverse, base, mutated, meta):
    offset, dim1, dim2 = _bound(meta, ("offset", "dim1", "dim2"))
    return f(aten.diagonal_scatter.default, base, mutated, offset, dim1, dim2)


def _as_strided_inverse(f: _Inverse, base, mutated, meta):
    size, stride, offset = _bound(meta, ("size", "stride", "storage_offset"))
    return f(aten.as_strided_scatter.default, base, mutated, size, stride, offset)


def _unbind_inverse(f: _Inverse, base, mutated, meta):
    (dim,) = _bound(meta, ("dim",))
    return f(aten.select_scatter.default, base, mutated, dim, meta.out_index)


def _split_inverse(f: _Inverse, base, mutated, meta):
    if meta.op is aten.split.Tensor:
        size, dim = _bound(meta, ("split_size", "dim"))
        start = meta.out_index * size
    else:
        sizes, dim = _bound(meta, ("split_sizes", "dim"))
        start = sum(sizes[: meta.out_index])
    end = start + mutated.shape[normalize_dim(dim, mutated.ndim)]
    return f(aten.slice_scatter.default, base, mutated, dim, start, end, 1)


_INVERSES: dict[OpOverload, Callable] = {
    aten.view.default: _view_inverse,
    aten.view.dtype: _view_dtype_inverse,
    aten.alias.default: _alias_inverse(aten.alias.default),
    aten.detach.default: _detach_inverse,
    aten.t.default: _alias_inverse(aten.t.default),
    aten.transpose.int: _same_inverse(aten.transpose.int),
    aten.permute.default: _permute_inverse,
    aten.expand.default: _expand_inverse,
    aten.squeeze.default: _squeeze_inverse,
    aten.squeeze.dims: _squeeze_inverse,
    aten.squeeze.dim: _squeeze_inverse,
    aten.unsqueeze.default: _unsqueeze_inverse,
    aten.select.int: _select_inverse,
    aten.slice.Tensor: _slice_inverse,
    aten.diagonal.default: _diagonal_inverse,
    aten.as_strided.default: _as_strided_inverse,
    aten.unbind.int: _unbind_inverse,
    aten.split.Tensor: _split_inverse,
    aten.split_with_sizes.default: _split_inverse,
}
