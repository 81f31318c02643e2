"""``autograd.Function`` under vmap: the transform handler that ``Function.apply`` hands batched calls to.

A Function with its own ``vmap`` staticmethod gets the batched values with their batch dims
(``in_dims``) and returns outputs with theirs (``out_dims``), as in PyTorch. A Function with
``generate_vmap_rule = True`` (or whose batched inputs need gradients at this level, which its own
``vmap`` cannot record) runs its ``forward`` on the batched tensors themselves: every op in it is
batched by its rule, and its ``backward`` runs on batched gradients.

One composition is refused rather than answered wrongly: a gradient transform *outside* vmap
through a Function (``grad(vmap(F.apply))``) would need the Function's backward at the unbatched
level, which this handler does not build yet.
"""

from __future__ import annotations

from typing import NamedTuple

from ember.core.tensor import Tensor
from ember.func._vmap.batched import BatchedTensor, state, wrap


class VmapInfo(NamedTuple):
    batch_size: int
    randomness: str


def _level_of(args: tuple, kwargs: dict) -> int:
    return max((a._level for a in (*args, *kwargs.values()) if type(a) is BatchedTensor), default=0)


def _needs_grad_below(t) -> bool:
    while type(t) is BatchedTensor:
        t = t._value
        if t.requires_grad:
            return True
    return False


def handle(function_cls, args: tuple, kwargs: dict):
    from ember.autograd import function as function_module

    depth = _level_of(args, kwargs)
    if depth == 0 or depth > state.visible:
        return NotImplemented
    function_module.require_setup_context(function_cls)
    batched = [a for a in (*args, *kwargs.values()) if type(a) is BatchedTensor and a._level == depth]
    if any(_needs_grad_below(a) for a in batched):
        raise RuntimeError(
            f"vmap: {function_cls.__name__} (an autograd.Function) got batched inputs that require grad below vmap "
            "(a gradient transform outside vmap); this composition is not supported yet"
        )
    own_vmap = function_cls.vmap is not function_module.Function.vmap
    wants_grad = any(a.requires_grad for a in batched)
    if own_vmap and not wants_grad and not function_cls.generate_vmap_rule:
        return _own_rule(function_cls, args, kwargs, depth)
    if function_cls.generate_vmap_rule or own_vmap:
        run = getattr(function_module, "apply_untransformed", None)
        if run is None:
            raise RuntimeError("vmap: this version of ember.autograd.Function cannot run a Function on batched tensors")
        return run(function_cls, *args, **kwargs)
    raise RuntimeError(
        f"You tried to vmap over {function_cls.__name__}, but it does not have vmap support. Please override and "
        "implement the vmap staticmethod or set generate_vmap_rule=True. For more details, please see "
        "https://pytorch.org/docs/main/notes/extending.func.html"
    )


def _own_rule(function_cls, args: tuple, kwargs: dict, depth: int):
    from ember.core.layout import normalize_dim
    from ember.func._tree import flatten, unflatten
    from ember.func._vmap.batched import Hidden

    if kwargs:
        raise RuntimeError(f"vmap: {function_cls.__name__}.vmap takes positional arguments only")
    level = state.levels[depth - 1]
    values, in_dims = [], []
    for a in args:
        if type(a) is BatchedTensor and a._level == depth:
            values.append(a._value)
            in_dims.append(a._bdim)
        else:
            values.append(a)
            in_dims.append(None)
    with Hidden(depth):
        result = function_cls.vmap(VmapInfo(level.size, level.randomness), tuple(in_dims), *values)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            f"{function_cls.__name__}.vmap must return a tuple of two things: (outputs, out_dims); got {type(result)}"
        )
    outputs, out_dims = result
    out_leaves, spec = flatten(outputs)
    dims = [out_dims] * len(out_leaves) if not isinstance(out_dims, tuple | list) else flatten(out_dims)[0]
    if len(dims) != len(out_leaves):
        raise RuntimeError(
            f"{function_cls.__name__}.vmap returned {len(out_leaves)} outputs but out_dims has {len(dims)} entries"
        )
    wrapped = []
    for o, d in zip(out_leaves, dims, strict=True):
        if d is None or not isinstance(o, Tensor):
            wrapped.append(o)
        else:
            wrapped.append(wrap(o, normalize_dim(d, o.ndim), depth))
    return unflatten(wrapped, spec)


def install() -> None:
    """Register ``handle`` with ``ember.autograd.Function`` where that module exists."""
    try:
        from ember.autograd import function as function_module
    except ImportError:
        return
    setter = getattr(function_module, "set_transform_handler", None)
    if setter is not None:
        setter(handle)
