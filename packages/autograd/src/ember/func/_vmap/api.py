"""``vmap``: map a function over a dimension of its inputs, in one batched call.

The inputs named by ``in_dims`` become ``BatchedTensor`` wrappers at a new level; the function runs
once on them; each output is unwrapped with its batch moved to ``out_dims`` (an output not batched
at this level is the same for every lane, so it is expanded). ``chunk_size`` splits the batch and
runs the function once per chunk, concatenating the results. The checks and their messages follow
``torch.func.vmap``.
"""

from __future__ import annotations

import functools
from typing import Any

from ember.core.aten.shape.joining import cat_function
from ember.core.tensor import Tensor
from ember.func._tree import flatten, unflatten
from ember.func._vmap import randomness as _randomness
from ember.func._vmap.batched import BatchedTensor, Level, state, unwrap_to, wrap

_RANDOMNESS = ("error", "different", "same")


def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _broadcast(dims: Any, tree: Any) -> list | None:
    """``dims`` (an int or None, or a tree that is a prefix of ``tree``) as one entry per leaf."""
    if not isinstance(dims, list | tuple | dict):  # a leaf (checked to be an int or None later)
        return [dims] * len(flatten(tree)[0])
    if isinstance(dims, list | tuple) and isinstance(tree, list | tuple):
        if type(dims) is not type(tree) and not (isinstance(dims, tuple) and isinstance(tree, tuple)):
            return None
        if len(dims) != len(tree):
            return None
        out = []
        for d, t in zip(dims, tree, strict=True):
            sub = _broadcast(d, t)
            if sub is None:
                return None
            out.extend(sub)
        return out
    if isinstance(dims, dict) and isinstance(tree, dict):
        if set(dims) != set(tree):
            return None
        out = []
        for k in tree:
            sub = _broadcast(dims[k], tree[k])
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def _spec_text(tree: Any) -> str:
    return repr(flatten(tree)[1])


def _check_out_dims(out_dims: Any, func) -> None:
    for d in flatten(out_dims)[0] if not isinstance(out_dims, int) else [out_dims]:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(
                f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                "collection of ints representing where in the outputs the vmapped dimension should appear."
            )


def _process_inputs(func, in_dims: Any, args: tuple) -> tuple[int, list, list, Any]:
    name = _name(func)
    if not isinstance(in_dims, int) and not isinstance(in_dims, tuple):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially "
            f"nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if not args:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap over "
            "a function with no inputs. The latter is unsupported."
        )
    leaves, spec = flatten(args)
    dims = _broadcast(in_dims, args)
    if dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
            f"`inputs`. in_dims has structure {_spec_text(in_dims)} but inputs has structure {_spec_text(args)}."
        )
    for d, arg in zip(dims, leaves, strict=True):
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but in_dim must be "
                "either an integer dimension or None."
            )
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the input is of "
                f"type {type(arg)}. We cannot vmap over non-Tensor arguments, please use None as the respective "
                "in_dim"
            )
        if d is not None and not -arg.dim() <= d < arg.dim():
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but that input is a "
                f"Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy -{arg.dim()} <= in_dim < "
                f"{arg.dim()}."
            )
    sizes = [arg.size(d) for d, arg in zip(dims, leaves, strict=True) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} for the "
            "mapped dimension"
        )
    dims = [None if d is None else d % leaves[i].dim() for i, d in enumerate(dims)]
    return sizes[0], dims, leaves, spec


def _flat_out_dims(func, out_dims: Any, outputs: Any, out_spec: Any, n: int) -> list:
    def incompatible():
        raise ValueError(
            f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure "
            f"of `outputs`. out_dims has structure {_spec_text(out_dims)} but outputs has structure "
            f"{_spec_text(outputs)}."
        )

    if isinstance(outputs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    dims = _broadcast(out_dims, outputs)
    if dims is None:
        incompatible()
    return dims


def _run(func, in_dims, out_dims, randomness, size, dims, leaves, spec, kwargs):
    name = _name(func)
    depth = len(state.levels) + 1
    level = Level(depth, size, randomness)
    saved_visible = state.visible
    if saved_visible != len(state.levels):
        raise RuntimeError("vmap: cannot start a vmap while a batching rule runs")
    state.levels.append(level)
    state.visible = depth
    try:
        with _randomness.watching():
            batched = [a if d is None else wrap(a, d, depth) for a, d in zip(leaves, dims, strict=True)]
            outputs = func(*unflatten(batched, spec), **kwargs)
        out_leaves, out_spec = flatten(outputs)
        flat_dims = _flat_out_dims(func, out_dims, outputs, out_spec, len(out_leaves))
        result = []
        for o, d in zip(out_leaves, flat_dims, strict=True):
            if d is None:
                if type(o) is BatchedTensor and o._level == depth:
                    raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
                result.append(o)
                continue
            if not isinstance(o, Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. Did you mean to set "
                    "out_dims= to None for output?"
                )
            result.append(_unbatch(o, depth, size, d))
        return unflatten(result, out_spec)
    finally:
        state.levels.pop()
        state.visible = saved_visible


def _unbatch(o: Tensor, depth: int, size: int, out_dim: int) -> Tensor:
    out = unwrap_to(o, depth, size, out_dim)
    tangent = _tangent_of(o)
    if tangent is None:
        return out
    # A forward-AD tangent on a batched output is unbatched with it (when forward AD is present).
    from ember.autograd import forward_ad

    primal = forward_ad.unpack_dual(out).primal
    return forward_ad.make_dual(primal, unwrap_to(tangent, depth, size, out_dim))


_forward_ad: Any = None  # the forward_ad module once looked up; False where this build has none


def _tangent_of(o: Tensor):
    global _forward_ad
    if _forward_ad is None:
        try:
            from ember.autograd import forward_ad as module
        except ImportError:
            module = False
        _forward_ad = module if getattr(module, "unpack_dual", None) is not None else False
    if _forward_ad is False:
        return None
    try:
        return _forward_ad.unpack_dual(o).tangent
    except RuntimeError:  # no dual level is active
        return None


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size: int | None = None):
    """``func`` mapped over dimension ``in_dims`` of its inputs, batched into one call.

    Example::

        >>> x = ember.randn(5, 3)
        >>> ember.func.vmap(ember.dot)(x, x).shape
        ember.Size([5])
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        size, dims, leaves, spec = _process_inputs(func, in_dims, args)
        if chunk_size is None or chunk_size >= size:
            return _run(func, in_dims, out_dims, randomness, size, dims, leaves, spec, kwargs)
        return _chunked(func, in_dims, out_dims, randomness, size, dims, leaves, spec, kwargs, chunk_size)

    return wrapped


def _chunked(func, in_dims, out_dims, randomness, size, dims, leaves, spec, kwargs, chunk_size):
    pieces = []
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        chunk = [a if d is None else a.narrow(d, start, n) for a, d in zip(leaves, dims, strict=True)]
        pieces.append(_run(func, in_dims, out_dims, randomness, n, dims, chunk, spec, kwargs))
    flat = [flatten(p)[0] for p in pieces]
    out_spec = flatten(pieces[0])[1]
    flat_dims = _flat_out_dims(func, out_dims, pieces[0], out_spec, len(flat[0]))
    joined = []
    for i, d in enumerate(flat_dims):
        parts = [f[i] for f in flat]
        joined.append(parts[0] if d is None else cat_function(parts, d))
    return unflatten(joined, out_spec)
