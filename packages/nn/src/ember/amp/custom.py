"""``custom_fwd``/``custom_bwd``: an ``autograd.Function`` runs its backward under the autocast state of its forward."""

from __future__ import annotations

import functools

from ember.amp import autocast_mode as modes
from ember.nn._ops import ops


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate ``Function.forward``; with ``cast_inputs``, run it with autocast off on inputs cast to that dtype."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = modes.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = modes.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if modes.is_autocast_enabled(device_type):
            cast = [_cast(a, device_type, cast_inputs) for a in args[1:]]
            with modes.autocast(device_type, enabled=False):
                return fwd(ctx, *cast, **{k: _cast(v, device_type, cast_inputs) for k, v in kwargs.items()})
        return fwd(*args, **kwargs)

    return decorated


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate ``Function.backward``: it runs with the autocast state its forward saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        with modes.autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorated


def _cast(value, device_type: str, dtype):
    if isinstance(value, ops.Tensor):
        if value.device.type == device_type and value.is_floating_point() and value.dtype != ops.float64:
            return value.to(dtype)
        return value
    if isinstance(value, list | tuple):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value
