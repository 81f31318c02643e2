"""Reductions: a lane's dims shift past the batch; "all dims" means all of a lane's dims.

Ops with a list of dims reduce over the lane's dims listed explicitly. Ops whose ``dim`` is one int
or none (``argmax``, ``max``, ``median``, ...) reduce all of a lane by flattening each lane to one
dim first, and restore the kept dims after when ``keepdim`` asks for them.
"""

from __future__ import annotations

from ember.func._vmap.common import DYNAMIC_SHAPE, Bound, aten, loop, shift, unsupported
from ember.func._vmap.rules.shape import dims_rule
from ember.func._vmap.table import register


def list_dims_rule(name: str = "dim", empty_means_all: bool = True):
    """Reductions over ``int[]? dim``: None (or [] where it means all) becomes every lane dim."""

    def rule(call):
        bound = Bound(call)
        x = call.args[0]
        rank = x.ndim - 1
        dim = bound.get(name)
        if isinstance(dim, int):
            dim = [dim]
        if dim is None or (empty_means_all and len(dim) == 0):
            if rank == 0:
                # A 0-dim lane reduced over "all" of its dims: reduce a size-1 dim and drop it.
                bound.set(call.op.schema.arguments[0].name, x.unsqueeze(1))
                bound.set(name, [1])
                return _squeeze_kept(bound.run(), bound)
            bound.set(name, list(range(1, rank + 1)))
            return bound.run()
        if rank == 0:
            for d in dim:
                shift(d, 0)  # PyTorch's range check for a 0-dim tensor
            bound.set(call.op.schema.arguments[0].name, x.unsqueeze(1))
            bound.set(name, [1] * min(len(dim), 1))
            return _squeeze_kept(bound.run(), bound)
        bound.set(name, [shift(d, rank) for d in dim])
        return bound.run()

    return rule


def _squeeze_kept(result, bound: Bound):
    if isinstance(result, tuple):
        parts = [r.reshape(r.shape[:1]) for r in result]
        return tuple(parts) if type(result) is tuple else type(result)(*parts)
    return result.reshape(result.shape[:1])


register(
    list_dims_rule(),
    aten.sum.dim_IntList,
    aten.mean.dim,
    aten.nansum.default,
    aten.nanmean.default,
    aten.amax.default,
    aten.amin.default,
    aten.logsumexp.default,
    aten.std.correction,
    aten.var.correction,
    aten.std_mean.correction,
    aten.var_mean.correction,
    aten.linalg_vector_norm.default,
    aten.count_nonzero.dim_IntList,
)
# For these an empty list reduces nothing (only None means every dim).
register(list_dims_rule(empty_means_all=False), aten.nuclear_norm.dim, aten.all.dims, aten.any.dims)
register(
    dims_rule("dim"),
    aten.all.dim,
    aten.any.dim,
    aten.prod.dim_int,
    aten.max.dim,
    aten.min.dim,
    aten.median.dim,
    aten.nanmedian.dim,
)


def _flat(call):
    """Each lane as one dim: ``(B, n)``."""
    x = call.args[0]
    return x.reshape((call.size, -1))


def _full(reducer):
    """Reductions of a whole lane (``sum(x)``, ``max(x)``, ...), computed over its flattened lane."""

    def rule(call):
        return reducer(call, _flat(call))

    return rule


register(_full(lambda c, f: aten.sum.dim_IntList(f, [1], dtype=c.kwargs.get("dtype"))), aten.sum.default)
register(_full(lambda c, f: aten.mean.dim(f, [1], dtype=c.kwargs.get("dtype"))), aten.mean.default)
register(_full(lambda c, f: aten.prod.dim_int(f, 1, dtype=c.kwargs.get("dtype"))), aten.prod.default)
register(_full(lambda c, f: aten.amax.default(f, [1]) if f.shape[1] else aten.max.default(f)), aten.max.default)
register(_full(lambda c, f: aten.amin.default(f, [1]) if f.shape[1] else aten.min.default(f)), aten.min.default)
register(_full(lambda c, f: aten.all.dim(f, 1)), aten.all.default)
register(_full(lambda c, f: aten.any.dim(f, 1)), aten.any.default)
register(_full(lambda c, f: aten.median.dim(f, 1)[0] if f.shape[1] else aten.median.default(f)), aten.median.default)
register(
    _full(lambda c, f: aten.nanmedian.dim(f, 1)[0] if f.shape[1] else aten.nanmedian.default(f)),
    aten.nanmedian.default,
)


def _optional_int_dim(call):
    """``argmax``/``argmin``/``aminmax``/``count_nonzero``: ``dim=None`` reduces the flattened lane."""
    bound = Bound(call)
    x = call.args[0]
    rank = x.ndim - 1
    dim = bound.get("dim")
    keepdim = bound.get("keepdim") if any(a.name == "keepdim" for a in call.op.schema.arguments) else False
    if dim is None:
        bound.set(call.op.schema.arguments[0].name, _flat(call))
        bound.set("dim", 1)
        if keepdim:
            bound.set("keepdim", False)
        result = bound.run()
        if keepdim:
            shape = (call.size, *([1] * rank))
            result = tuple(r.reshape(shape) for r in result) if isinstance(result, tuple) else result.reshape(shape)
        return result
    if rank == 0:
        shift(dim, 0)
        bound.set(call.op.schema.arguments[0].name, x.unsqueeze(1))
        bound.set("dim", 1)
        result = bound.run()
        if isinstance(result, tuple):
            return type(result)(*(r.reshape(r.shape[:1]) for r in result))
        return result.reshape(result.shape[:1])
    bound.set("dim", shift(dim, rank))
    return bound.run()


register(_optional_int_dim, aten.argmax.default, aten.argmin.default, aten.aminmax.default)


def _count_nonzero(call):
    bound = Bound(call)
    dim = bound.get("dim")
    x = call.args[0]
    rank = x.ndim - 1
    dims = list(range(1, rank + 1)) if dim is None else [shift(dim, rank)] if rank else []
    if not dims:
        return aten.count_nonzero.dim_IntList(x.unsqueeze(1), [1])
    return aten.count_nonzero.dim_IntList(x, dims)


register(_count_nonzero, aten.count_nonzero.default)


# bincount's length depends on each lane's values (refused, as PyTorch refuses it); histc's range may
# be each lane's own extremes, so it runs once per lane.
register(unsupported(DYNAMIC_SHAPE), aten.bincount.default)
register(loop, aten.histc.default)

# hash_tensor reduces a list of dims ([] means all of them); a segment reduction's segments may differ
# per lane (a batched lengths tensor), so it runs once per lane, as does its backward op.
register(list_dims_rule(), aten.hash_tensor.default)
register(loop, aten.segment_reduce.default, aten._segment_reduce_backward.default)
