"""``functionalize(f, remove=...)``: ``f`` run on functional tensors, its input mutations applied at
the end (``ember.func.functionalize`` calls this; the fx package registers it there when imported).

As PyTorch's ``torch.func.functionalize``: the inputs are wrapped, ``f`` runs, its outputs are
synced and unwrapped, and each input whose data ``f`` mutated gets the final value with one
``copy_``, which is what a trace of the call (``make_fx``) ends with. One addition: with
``remove="mutations"``, an output that is a view of a mutated input is made again from that input
after its ``copy_``, so it aliases the input as it does in eager (PyTorch returns a copy there).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember._subclasses import functional_tensor as F
from ember.autograd import no_grad
from ember.autograd._providers import register_functionalize
from ember.core.pointwise import resize_out
from ember.core.tensor import Tensor
from ember.utils import _pytree as pytree


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    reapply_views = remove == "mutations"

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        level = F._push(reapply_views)
        try:
            flat, spec = pytree.tree_flatten((args, kwargs))
            wrapped_flat = [F.to_functional(x, level) if isinstance(x, Tensor) else x for x in flat]
            fargs, fkwargs = pytree.tree_unflatten(wrapped_flat, spec)
            outputs = func(*fargs, **fkwargs)
            out_flat, out_spec = pytree.tree_flatten(outputs)
            # Outputs first, then the inputs: the order PyTorch syncs them in, so the graphs match.
            unwrapped = [_unwrap(level, x) for x in out_flat]
            for x in wrapped_flat:
                F.sync(x)
            with F._Hidden(level):
                for original, x in zip(flat, wrapped_flat, strict=True):
                    if isinstance(x, F.FunctionalTensor) and F.has_data_mutation(x) and x._value is not original:
                        _propagate(original, x._value)
                if reapply_views:
                    unwrapped = [
                        _realias(level, o, u, flat, wrapped_flat) for o, u in zip(out_flat, unwrapped, strict=True)
                    ]
            return pytree.tree_unflatten(unwrapped, out_spec)
        finally:
            F._pop(level)

    return wrapped


def _propagate(original: Tensor, value: Tensor) -> None:
    """The input mutation applied to the input: a resize first where an ``out=`` op resized it."""
    if tuple(original.shape) != tuple(value.shape):
        resize_out(original, tuple(value.shape))
    # Not recorded by autograd: this writes back what the function did (a traced optimizer step updates
    # parameters that require grad under no_grad, and the trace may end with grad mode on again).
    with no_grad():
        original.copy_(value)


def _unwrap(level: F._Level, x: Any) -> Any:
    if isinstance(x, F.FunctionalTensor) and x._level is level:
        return F.from_functional(x)
    return x


def _realias(level: F._Level, out: Any, value: Any, inputs: list, wrapped: list) -> Any:
    """An output viewing a mutated input, made again as a view of the input itself."""
    if not isinstance(out, F.FunctionalTensor) or out._level is not level:
        return value
    for original, x in zip(inputs, wrapped, strict=True):
        if (
            isinstance(x, F.FunctionalTensor)
            and x._fstorage is out._fstorage
            and F.has_data_mutation(x)
            and not x._metas
        ):
            if out is x:
                return original
            view = original
            for meta in out._metas:
                view = meta.forward(lambda op, a, k: op(*a, **k), view)
            return view
    return value


register_functionalize(functionalize)
