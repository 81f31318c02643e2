"""Activation checkpointing: keep a block's inputs, not its intermediate tensors, and recompute them.

Two variants, as in PyTorch:

- Non-reentrant (``use_reentrant=False``, recommended). The block runs under
  ``saved_tensors_hooks`` whose pack hook keeps an empty holder instead of each tensor the block
  saves for backward. The first time backward unpacks a holder, the block runs again (on the
  saved inputs, with the forward's RNG state, grad mode on) under hooks that, instead of saving,
  fill the holders in the order the forward saved them, and stop the rerun once every holder is
  filled. Each backward pass (engine task id) recomputes once; a holder unpacked twice in one pass
  is an error. Works with ``autograd.grad``, keyword arguments and nesting: the inputs of an inner
  checkpoint are tensors saved by the outer one.
- Reentrant (``use_reentrant=True``; what runs when ``use_reentrant`` is not given, with a warning,
  as in PyTorch 2.13). A ``Function`` whose forward runs the block without grad and whose
  backward reruns it with grad and calls ``backward`` inside the backward. Its gradients reach
  ``.grad`` only, so it refuses ``autograd.grad`` and ``backward(inputs=...)``.

Both restore the CPU generator's state of the forward before recomputing, so dropout and other
random ops draw the same numbers (``preserve_rng_state=False`` skips that). Autocast state is not
captured (Ember has no autocast yet).
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from ember.autograd import graph_task
from ember.autograd.function import Function
from ember.autograd.functional_api import backward as autograd_backward
from ember.autograd.grad_mode import enable_grad, no_grad, state
from ember.autograd.graph import SavedTensor, saved_tensors_hooks
from ember.core.tensor import Tensor
from ember.random import fork_rng, get_rng_state, set_rng_state

__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "detach_variable",
    "noop_context_fn",
    "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
]


class CheckpointError(RuntimeError):
    """The recomputation did not save what the forward saved (a non-deterministic block)."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor detached, keeping its ``requires_grad``; other values as they are."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            x = d
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


_early_stop_override: bool | None = None
_debug_override: bool | None = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Within this block, ``debug`` of every checkpoint is ``enabled`` (None: each call's own)."""
    global _debug_override
    prev = _debug_override
    _debug_override = enabled
    try:
        yield
    finally:
        _debug_override = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Within this block, non-reentrant recomputation stops (or not) once every tensor is recovered."""
    global _early_stop_override
    prev = _early_stop_override
    _early_stop_override = enable
    try:
        yield
    finally:
        _early_stop_override = prev


def _use_reentrant_warning(api: str) -> None:
    warnings.warn(
        f"{api}: the use_reentrant parameter should be passed explicitly. use_reentrant=False is recommended; "
        "without it the reentrant variant runs, as in PyTorch. Refer to the docs for the differences between the "
        "two variants.",
        stacklevel=3,
    )


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn: Callable = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs,
):
    """Run ``function(*args, **kwargs)`` keeping only its inputs; backward recomputes the rest.

    ``preserve_rng_state`` (keyword, default True) replays the forward's random numbers.
    ``context_fn`` returns two context managers: one for the forward, one for the recomputation.
    ``determinism_check="default"`` compares shape, dtype and device of each recomputed tensor with
    the forward's (``"none"`` skips it). ``debug`` (and ``set_checkpoint_debug_enabled``) is accepted,
    but the errors carry no trace of the ops run, unlike PyTorch's.
    """
    if use_reentrant is None:
        _use_reentrant_warning("ember.utils.checkpoint")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if (debug if _debug_override is None else _debug_override) and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _METADATA:
        raise ValueError(f"determinism_check should be one of {list(_METADATA)}, but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    if not state.enabled:  # nothing is saved, so nothing to recompute (and, as in PyTorch, no context)
        return function(*args, **kwargs)
    rng = get_rng_state() if preserve else None

    def recompute(*inputs) -> None:
        with fork_rng(devices=[], enabled=preserve):
            if rng is not None:
                set_rng_state(rng)
            with recompute_context:
                function(*inputs, **kwargs)

    stop = early_stop if _early_stop_override is None else _early_stop_override
    frame = _Frame(recompute, stop, _METADATA[determinism_check])
    frame.saved_args = [SavedTensor(a) if isinstance(a, Tensor) else a for a in args]
    with _CheckpointHooks(frame), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    return out


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` in turn on ``input``, checkpointing all but the last of ``segments`` chunks."""
    if use_reentrant is None:
        _use_reentrant_warning("ember.utils.checkpoint.checkpoint_sequential")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):  # an nn.Sequential
        functions = list(functions.children())

    def run(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


# -- the reentrant variant -------------------------------------------------------------------------


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not graph_task.is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, ember.utils.checkpoint is incompatible with .grad() or passing an `inputs` "
                "parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or call "
                ".backward() without passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors, strict=True):
            inputs[i] = t
        with fork_rng(devices=[], enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=False) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(x.grad if isinstance(x, Tensor) else None for x in detached))


# -- the non-reentrant variant ---------------------------------------------------------------------


def _metadata(x: Tensor) -> dict:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_METADATA = {"default": _metadata, "none": lambda _: None}
_outside_ids = itertools.count(start=1 << 62)  # task ids for unpacks outside of any backward


class _Handle:
    """The key of one recomputed tensor: the tensor lives as long as its holder refers to this."""

    __slots__ = ("__weakref__",)


class _Holder:
    """What the forward saved in place of a tensor; per backward pass, the handle of its recomputation."""

    __slots__ = ("__weakref__", "handles")

    def __init__(self) -> None:
        self.handles: dict = {}


class _StopRecomputation(Exception):
    pass


class _Frame:
    """One checkpointed call: its inputs, its holders, and per backward pass the recomputed tensors."""

    def __init__(self, recompute: Callable, early_stop: bool, metadata: Callable) -> None:
        self.recompute = recompute
        self.early_stop = early_stop
        self.metadata = metadata
        self.saved_args: list = []
        self.holders: list = []  # weak references, in the order the forward saved
        self.metadatas: list = []
        self.recomputed: defaultdict = defaultdict(weakref.WeakKeyDictionary)  # task id -> handle -> tensor
        self.counter: defaultdict = defaultdict(int)  # task id -> tensors saved by the recomputation so far
        self.done: set = set()  # task ids whose recomputation ran
        self.forward_completed = False
        self.ignore_mismatch = False

    def inputs(self) -> list:
        return [a.unpack(None) if isinstance(a, SavedTensor) else a for a in self.saved_args]

    def check(self, gid: int) -> None:
        if self.ignore_mismatch:
            return
        if len(self.holders) != self.counter[gid]:
            raise CheckpointError(
                "ember.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {len(self.holders)}\nNumber of tensors "
                f"saved during recomputation: {self.counter[gid]}."
            )
        different = []
        for i, ref in enumerate(self.holders):
            holder = ref()
            if holder is None:
                continue
            got = self.metadata(self.recomputed[gid][holder.handles[gid]])
            if got != self.metadatas[i]:
                different.append(
                    f"tensor at position {i}:\nsaved metadata: {self.metadatas[i]}\nrecomputed metadata: {got}\n"
                )
        if different:
            raise CheckpointError(
                "ember.utils.checkpoint: Recomputed values for the following tensors have different metadata than "
                f"during the forward pass.\n{''.join(different)}."
            )


class _CheckpointHooks(saved_tensors_hooks):
    """The forward's hooks: a holder for each saved tensor, filled by recomputing on first unpack."""

    def __init__(self, frame: _Frame) -> None:
        def pack(x: Tensor) -> _Holder:
            holder = _Holder()
            frame.holders.append(weakref.ref(holder))
            with no_grad():
                frame.metadatas.append(frame.metadata(x))
            return holder

        def unpack(holder: _Holder) -> Tensor:
            gid = graph_task.current_graph_task_id()
            if gid == -1:
                gid = next(_outside_ids)
            if gid not in frame.done:
                args = frame.inputs()
                try:
                    with _RecomputeHooks(frame, gid), enable_grad():
                        frame.recompute(*args)
                except _StopRecomputation:
                    pass
                frame.done.add(gid)
                frame.check(gid)
            handle = holder.handles.get(gid)
            if handle is None:
                raise CheckpointError(
                    "ember.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. "
                    "If you are calling ctx.saved_tensors in backward, make sure to do so only once."
                )
            holder.handles[gid] = None
            return frame.recomputed[gid][handle]

        super().__init__(pack, unpack)


class _RecomputeHooks(saved_tensors_hooks):
    """The recomputation's hooks: each saved tensor goes to the holder at its position."""

    def __init__(self, frame: _Frame, gid: int) -> None:
        def pack(x: Tensor) -> Tensor:
            x = x.detach() if x.requires_grad else x
            i = frame.counter[gid]
            frame.counter[gid] += 1
            if i >= len(frame.holders):
                if not frame.forward_completed:
                    # A backward inside the checkpointed block itself: it saves more than the forward did.
                    frame.ignore_mismatch = True
                    return x
                raise CheckpointError(
                    "ember.utils.checkpoint: trying to save more tensors during recomputation than during the "
                    "original forward pass."
                )
            holder = frame.holders[i]()
            if holder is not None:  # else its saved tensor was freed already: nothing to recover
                handle = _Handle()
                holder.handles[gid] = handle
                frame.recomputed[gid][handle] = x
            if frame.early_stop and frame.counter[gid] == len(frame.holders):
                raise _StopRecomputation
            return x

        super().__init__(pack, lambda x: x)
