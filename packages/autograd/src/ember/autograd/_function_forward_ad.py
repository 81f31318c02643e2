"""Forward AD through a custom ``Function``: its ``jvp`` gives the outputs' tangents.

Installed as ``function.set_forward_ad_handler`` where forward AD exists (``_forward_dispatch``).
When a call has a dual argument at the open level, the handler runs the Function as usual (its
``forward`` sees no tangents, as in PyTorch; autograd records the reverse-mode node), then calls
``jvp`` with the inputs' tangents and gives each output the tangent it returned. An input modified
in place must have its tangent modified in place by ``jvp`` and returned as it is.
"""

from __future__ import annotations

import importlib
import importlib.util

from ember.autograd import function
from ember.core.tensor import Tensor

_fd = None  # ember.autograd._forward_dispatch, once installed


def install() -> None:
    """Register ``handle`` with ``Function`` where forward AD is part of this installation."""
    global _fd
    if importlib.util.find_spec("ember.autograd._forward_dispatch") is None:
        return
    _fd = importlib.import_module("ember.autograd._forward_dispatch")
    function.set_forward_ad_handler(handle)


def handle(cls, args: tuple, kwargs: dict, run):
    fd = _fd
    if fd.current is None or fd._local.busy:
        return NotImplemented
    args = function._positional(cls, args, kwargs)
    tangents = [fd.tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return NotImplemented
    versions = [t._version if t is not None else None for t in tangents]
    with fd.busy():
        ctx, outputs = run(args, {})
        out_tangents = function.call_jvp(ctx, args, tangents, outputs)
    items = outputs if isinstance(outputs, tuple) else (outputs,)
    for out, tangent in zip(items, out_tangents, strict=True):
        if not isinstance(out, Tensor):
            continue
        k = next((k for k, a in enumerate(args) if a is out), None)
        if k is not None and tangents[k] is not None:  # an input modified in place (mark_dirty)
            if tangent is not tangents[k]:
                raise RuntimeError(
                    "An inplace custom Function is not returning the forward mode gradients as-is. If the forward is "
                    "modifying an input inplace, then the jvp function must modify the gradient inplace and return "
                    "it as-is."
                )
            if tangent._version == versions[k]:
                raise RuntimeError(
                    "An inplace custom Function is not modifying the forward mode gradients inplace. If the forward "
                    "is modifying an input inplace, then the jvp function must modify the corresponding gradient "
                    "inplace."
                )
            continue
        fd.set_tangent(out, None if tangent is None else fd.laid_out_like(tangent, out))
    return outputs
