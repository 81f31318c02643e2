"""Random ops under vmap: ``randomness='error'``, ``'same'`` or ``'different'``.

A random op may take no batched argument at all (``ember.rand(3)`` inside the mapped function), so
batching rules alone cannot see it: while any vmap runs, ``VmapMode`` (a dispatch mode) looks at
every random op first. At the innermost visible level:

- ``error``: the op raises, as in PyTorch;
- ``same``: an op with no argument batched at the level runs once, shared by every lane; one with
  a batched argument goes to its batching rule, which draws the same numbers for every lane;
- ``different``: a factory draws a batch at once (``rand(3)`` becomes ``rand(B, 3)``); an op whose
  inputs are not batched at the level gets its input expanded to the batch first, so every lane
  draws its own numbers; an in-place op on an unbatched tensor raises, as in PyTorch.
"""

from __future__ import annotations

import contextlib

from ember.core.aten.shape.joining import _stack_function as stack_function
from ember.core.dispatch import DispatchMode, active_modes
from ember.func._vmap.batched import BatchedTensor, Hidden, visible_level, wrap

RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' or 'different' "
    "randomness flags on vmap or perform the randomness operation out of vmap"
)
INPLACE_DIFFERENT = (
    "vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear like same "
    "randomness. If this is necessary for your usage, please file an issue with functorch."
)


def _batched_at(args: tuple, kwargs: dict, depth: int) -> bool:
    return any(type(a) is BatchedTensor and a._level == depth for a in (*args, *kwargs.values()))


def _first_tensor_position(op) -> int | None:
    for i, a in enumerate(op.schema.arguments):
        if a.type.base == "Tensor" and not a.kwarg_only:
            return i
    return None


def _draws_nothing(func, args: tuple, kwargs: dict) -> bool:
    """A call of a random op with a ``dropout_p`` of 0 (the attention ops) draws no numbers."""
    for i, a in enumerate(func.schema.arguments):
        if a.name == "dropout_p":
            value = args[i] if i < len(args) else kwargs.get("dropout_p", a.default)
            return value == 0
    return False


class VmapMode(DispatchMode):
    """Sees every op while a vmap runs; handles the random ones (see the module docstring)."""

    def __ember_dispatch__(self, func, types, args, kwargs):
        if "random" not in func.tags or _draws_nothing(func, args, kwargs):
            return NotImplemented
        level = visible_level()
        if level is None:
            return NotImplemented
        if level.randomness == "error":
            raise RuntimeError(RANDOM_ERROR)
        if _batched_at(args, kwargs, level.depth):
            return NotImplemented  # the batching rule draws per its randomness
        position = _first_tensor_position(func)
        if level.randomness == "same" or (position is None and "factory" not in func.tags):
            with Hidden(level.depth):
                return func(*args, **kwargs)
        if position is None:  # a factory: draw every lane at once
            return _factory_different(func, args, kwargs, level)
        if func.schema.arguments[0].is_write:
            raise RuntimeError(INPLACE_DIFFERENT)
        # Every lane draws its own numbers from the same input.
        args = list(args)
        t = args[position]
        args[position] = wrap(t.unsqueeze(0).expand((level.size, *tuple(t.shape))).contiguous(), 0, level.depth)
        return func(*args, **kwargs)


def _factory_different(func, args: tuple, kwargs: dict, level):
    names = [a.name for a in func.schema.arguments if not a.kwarg_only]
    args = list(args)
    for name in ("size", "n"):
        if name in names and names.index(name) < len(args):
            i = names.index(name)
            if name == "n":  # randperm: one permutation per lane
                with Hidden(level.depth):
                    lanes = [func(*args, **kwargs) for _ in range(level.size)]
                return wrap(stack_function(lanes), 0, level.depth)
            size = args[i]
            args[i] = (level.size, *((size,) if isinstance(size, int) else tuple(size)))
            with Hidden(level.depth):
                value = func(*args, **kwargs)
            return wrap(value, 0, level.depth)
        if name in kwargs:
            size = kwargs[name]
            kwargs = dict(kwargs, **{name: (level.size, *((size,) if isinstance(size, int) else tuple(size)))})
            with Hidden(level.depth):
                value = func(*args, **kwargs)
            return wrap(value, 0, level.depth)
    raise RuntimeError(f"vmap: cannot batch the random factory {func} (no size argument)")


_MODE = VmapMode()


@contextlib.contextmanager
def watching():
    """``VmapMode`` on for the outermost vmap (inner ones share it)."""
    if any(m is _MODE for m in active_modes()):
        yield
        return
    with _MODE:
        yield
