"""Autograd for custom ops: the formula ``register_autograd`` stored on the op, run as a ``Function``.

``ember.library`` keeps ``(backward, setup_context)`` on the ``OpOverload`` (``op.autograd``); the
autograd level of the dispatcher sends calls of such ops, and of ``custom_op`` ops without a
formula, to ``record``. Each op gets one generated ``Function`` (its node is named
``GeneratedBackwardFor_<ns>_<name>_<overload>Backward``, as in PyTorch). Its forward runs the op
below the autograd level; ``setup_context(ctx, inputs, output)`` sees every positional argument of
the schema with defaults filled in (and, where the schema has keyword-only arguments,
``keyword_only_inputs`` too); ``backward(ctx, *grads)`` returns one gradient per positional
argument, a list for a ``Tensor[]``. A custom op without a formula records a node whose backward
raises PyTorch's error, so that only differentiating through it fails.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.autograd.function import Function
from ember.autograd.grad_mode import state
from ember.core.dispatch import OpOverload
from ember.core.schema import _NO_DEFAULT
from ember.core.tensor import Tensor

__all__ = ["record", "register_autograd"]


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None, lib=None) -> None:
    """Register ``op``'s derivative: ``backward(ctx, *grads)`` after ``setup_context(ctx, inputs, output)``.

    The same as ``ember.library.register_autograd``; ``op`` is a custom op, an ``OpOverload`` or its
    qualified name.
    """
    from ember import library

    library.register_autograd(op, backward, setup_context=setup_context, lib=lib)


class _Call:
    """What the generated forward needs besides the tensors: how to run the op below autograd."""

    __slots__ = ("args", "call_below", "kwargs", "list_sizes", "out_sizes")

    def __init__(self, call_below, args: tuple, kwargs: dict, list_sizes: list) -> None:
        self.call_below = call_below
        self.args = args
        self.kwargs = kwargs
        self.list_sizes = list_sizes
        self.out_sizes: list | None = None  # set by forward when an output is a list of tensors


_generated: dict[OpOverload, type] = {}


def _is_custom_op(op: OpOverload) -> bool:
    from ember.library.custom_op import OPDEFS

    return OPDEFS.get(f"{op.namespace}::{op.name}") is not None


def record(op: OpOverload, args: tuple, kwargs: dict, call_below):
    """The autograd level for ``op``: a generated Function's apply, or ``NotImplemented`` when the op
    is neither given a formula nor a custom op (the caller goes on with its own rules)."""
    if op.autograd is None and not _is_custom_op(op):
        return NotImplemented
    if op.schema.is_mutable:
        return NotImplemented
    if not state.enabled:
        return call_below(args, kwargs)
    inputs = _bind(op, args, kwargs)[0]
    flat, sizes = [], []
    for value in inputs:
        if type(value) in (list, tuple) and value and all(isinstance(v, Tensor) for v in value):
            flat.extend(value)
            sizes.append(len(value))
        else:
            flat.append(value)
            sizes.append(None)
    cls = _generated.get(op)
    if cls is None:
        cls = _generated[op] = _make_function(op)
    call = _Call(call_below, args, kwargs, sizes)
    out = cls.apply(*flat, call)
    # A Function returns a flat tuple: give the op's own structure back (lists for Tensor[] outputs).
    if call.out_sizes is None:
        return out
    regrouped = _regroup(out if isinstance(out, tuple) else (out,), call.out_sizes)
    return regrouped[0] if len(call.out_sizes) == 1 else regrouped


def _bind(op: OpOverload, args: tuple, kwargs: dict) -> tuple:
    """Positional schema arguments (defaults filled) and keyword-only ones, as PyTorch hands them over."""
    positional, keyword_only = [], {}
    i = 0
    for a in op.schema.arguments:
        default = a.default if a.default is not _NO_DEFAULT else None
        if a.kwarg_only:
            keyword_only[a.name] = kwargs.get(a.name, default)
            continue
        if i < len(args):
            positional.append(args[i])
        else:
            positional.append(kwargs.get(a.name, default))
        i += 1
    return tuple(positional), keyword_only


def _regroup(flat: tuple, sizes: list) -> tuple:
    out, i = [], 0
    for n in sizes:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i : i + n]))
            i += n
    return tuple(out)


def _make_function(op: OpOverload) -> type:
    has_keyword_only = any(a.kwarg_only for a in op.schema.arguments)

    def forward(ctx, *flat):
        call = flat[-1]
        result = call.call_below(call.args, call.kwargs)
        ctx._call_sizes = call.list_sizes
        if op.autograd is not None and op.autograd[1] is not None:
            setup_context = op.autograd[1]
            inputs, keyword_only = _bind(op, call.args, call.kwargs)
            if has_keyword_only:
                setup_context(ctx=ctx, inputs=inputs, keyword_only_inputs=keyword_only, output=result)
            else:
                setup_context(ctx=ctx, inputs=inputs, output=result)
        many = isinstance(result, tuple)
        items = result if many else (result,)
        if not any(isinstance(r, list) for r in items):
            return result
        flat, sizes = [], []
        for r in items:
            if isinstance(r, list):
                flat.extend(r)
                sizes.append(len(r))
            else:
                flat.append(r)
                sizes.append(None)
        call.out_sizes = ctx._out_sizes = sizes
        return tuple(flat)

    def backward(ctx, *grads):
        if op.autograd is None:
            raise RuntimeError(
                f"Trying to backward through {op} but no autograd formula was registered. Please use "
                "register_autograd to add one."
            )
        if getattr(ctx, "_out_sizes", None) is not None:
            grads = _regroup(grads, ctx._out_sizes)  # a list of gradients for a Tensor[] output
        sizes = ctx._call_sizes
        full = ctx.needs_input_grad
        ctx.needs_input_grad = _regroup(full[:-1], sizes)
        try:
            result = op.autograd[0](ctx, *grads)
        finally:
            ctx.needs_input_grad = full
        result = result if isinstance(result, tuple) else (result,)
        flat = []
        for value, n in zip(result, sizes, strict=False):
            if n is None:
                flat.append(None if isinstance(value, list) and not value else value)  # an empty Tensor[]
            else:
                flat.extend([None] * n if value is None else value)
        return (*flat, *result[len(sizes) :], None)

    name = f"GeneratedBackwardFor_{op.namespace}_{op.name}_{op.overload}"
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
