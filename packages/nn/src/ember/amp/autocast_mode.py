"""``ember.autocast``: mixed precision at the dispatcher's autocast level.

While a region is enabled on some thread, the dispatcher's ``autocast`` level is switched on, above autograd. For an op on
``policy.py``'s lists it casts the op's floating-point tensors of the region's device (never
float64 ones) and runs the op with autocast off for that thread, so the ops the op is made of see
the cast inputs and are not cast again, as in PyTorch. Every other op passes through untouched:
its own parts may still be cast. The casts are ordinary ops, so autograd records them and
gradients come back in the inputs' dtypes.

Casts of float32 leaf parameters to the low-precision dtype are cached for the outermost region
(a weight used by several layers is cast once); the cache is emptied when that region exits.
"""

from __future__ import annotations

import functools
import sys
import threading
import warnings
import weakref

from ember.amp.policy import policy_of
from ember.core import dispatch
from ember.nn._ops import ops

_DEVICE_TYPES = ("cpu", "cuda")
_LOW_PRECISION = {"cpu": ("bfloat16", "float16"), "cuda": ("bfloat16", "float16")}


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": ops.bfloat16, "cuda": ops.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.inside_op = 0
        self.cache: dict[int, tuple[weakref.ref, ops.Tensor]] = {}


_state = _ThreadState()
_threads_enabled: set[int] = set()
_lock = threading.Lock()


def _check_device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    kind = ops.device(device_type).type  # the device parser names a bad string
    return kind


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type`` (``'cpu'`` and ``'cuda'``)."""
    return _check_device_type(device_type) in _DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """With no argument, whether CUDA autocast is on (PyTorch's legacy meaning)."""
    kind = "cuda" if device_type is None else _check_device_type(device_type)
    return _state.enabled.get(kind, False)


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    kind = _check_device_type(device_type)
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    _state.enabled[kind] = bool(enabled)
    _refresh_level()


def get_autocast_dtype(device_type: str):
    kind = _check_device_type(device_type)
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return _state.dtype[kind]


def set_autocast_dtype(device_type: str, dtype) -> None:
    kind = _check_device_type(device_type)
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    _state.dtype[kind] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


class autocast:
    """Run the ops of a region in mixed precision: ``with ember.autocast("cpu"):`` or as a decorator."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None) -> None:
        kind = _check_device_type(device_type)
        if kind not in _DEVICE_TYPES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = kind
        self.fast_dtype = _state.dtype[kind] if dtype is None else dtype
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else bool(cache_enabled)
        self._enabled = bool(enabled)
        if not self._enabled:
            return
        if kind == "cuda" and not _cuda_available():
            warnings.warn("CUDA is not available. Disabling autocast.", UserWarning, stacklevel=2)
            self._enabled = False
        elif self.fast_dtype.name not in _LOW_PRECISION[kind]:
            names = ", ".join(f"ember.{n}" for n in _LOW_PRECISION[kind])
            warnings.warn(
                f"In {kind.upper()} autocast, but the target dtype is not supported. Disabling autocast.\n"
                f"{kind.upper()} Autocast only supports dtypes of {names} currently.",
                UserWarning,
                stacklevel=2,
            )
            self._enabled = False

    def __enter__(self):
        self._previous = (_state.enabled[self.device], _state.dtype[self.device], _state.cache_enabled)
        _state.enabled[self.device] = self._enabled
        _state.dtype[self.device] = self.fast_dtype
        _state.cache_enabled = self._cache_enabled
        _state.nesting += 1
        _refresh_level()
        return self

    def __exit__(self, *exc) -> None:
        _state.nesting -= 1
        if _state.nesting == 0:
            _state.cache.clear()
        _state.enabled[self.device], _state.dtype[self.device], _state.cache_enabled = self._previous
        _refresh_level()

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorated


def _cuda_available() -> bool:
    cuda = sys.modules.get("ember.cuda")  # only if the program has it: importing it is not ours to do
    try:
        return bool(cuda is not None and cuda.is_available())
    except Exception:  # a fallback without the device plugin
        return False


def _refresh_level() -> None:
    """The autocast level is on only while some thread has autocast on: otherwise ops go fast."""
    me = threading.get_ident()
    on = any(_state.enabled.values())
    with _lock:
        was_empty = not _threads_enabled
        if on:
            _threads_enabled.add(me)
        else:
            _threads_enabled.discard(me)
        if was_empty and _threads_enabled:
            if dispatch.level_handler("autocast") is None:
                dispatch.install_level("autocast", _autocast_call)
            dispatch.enable_level("autocast")
        elif not was_empty and not _threads_enabled:
            dispatch.enable_level("autocast", False)


# -- the autocast level --------------------------------------------------------------------------


def _autocast_call(op, args, kwargs, call_below):
    state = _state
    if state.inside_op:
        return call_below(args, kwargs)
    policy = policy_of(op.name)
    if policy is None:
        return call_below(args, kwargs)
    kind = _device_type_of(args, kwargs)
    if kind is None or not state.enabled.get(kind, False):
        return call_below(args, kwargs)
    if policy == "lower":
        target = state.dtype[kind]
    elif policy == "float32":
        target = ops.float32
    else:
        target = _widest(args, kwargs, kind, state.dtype[kind])
    if target is not None:
        args = tuple(_cast(a, kind, target, policy) for a in args)
        kwargs = {k: _cast(v, kind, target, policy) for k, v in kwargs.items()}
    state.inside_op += 1
    try:
        return call_below(args, kwargs)
    finally:
        state.inside_op -= 1


def _device_type_of(args, kwargs) -> str | None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, ops.Tensor):
            return value.device.type
        if isinstance(value, list | tuple):
            for item in value:
                if isinstance(item, ops.Tensor):
                    return item.device.type
    return None


def _eligible(t, kind: str) -> bool:
    return t.device.type == kind and t.is_floating_point() and t.dtype != ops.float64


def _widest(args, kwargs, kind: str, low):
    """float32 when an eligible input is float32, else the region's dtype; another low type is an error."""
    target = low
    for value in (*args, *kwargs.values()):
        items = value if isinstance(value, list | tuple) else (value,)
        for t in items:
            if isinstance(t, ops.Tensor) and _eligible(t, kind):
                if t.dtype == ops.float32:
                    target = ops.float32
                elif t.dtype != low:
                    raise RuntimeError(
                        f"autocast to {low}: an input of {t.dtype} has no common type with the region's dtype"
                    )
    return target


def _cast(value, kind: str, target, policy: str):
    if isinstance(value, ops.Tensor):
        if not _eligible(value, kind) or value.dtype == target:
            return value
        if policy == "lower" and _cacheable(value):
            return _cached_cast(value, target)
        return value.to(target)
    if isinstance(value, list | tuple):
        return type(value)(_cast(v, kind, target, policy) for v in value)
    return value


def _cacheable(t) -> bool:
    # Only with grad mode on: a cast made under no_grad has no history and must not serve a
    # later call that needs one.
    return (
        _state.cache_enabled
        and t.dtype == ops.float32
        and t.requires_grad
        and t.is_leaf
        and t._base is None
        and ops.is_grad_enabled()
    )


def _cached_cast(t, target):
    hit = _state.cache.get(id(t))
    if hit is not None and hit[0]() is t and hit[1].dtype == target:
        return hit[1]
    cast = t.to(target)
    _state.cache[id(t)] = (weakref.ref(t), cast)
    return cast
