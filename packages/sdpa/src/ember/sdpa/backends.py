"""Which ``scaled_dot_product_attention`` backend runs, and why the others do not.

The enable flags (``ember.backends.cuda.enable_flash_sdp`` and friends read and write them) and the
priority order live here, below ``ember.nn``, so that both the front end and the meta-package's
``ember.backends.cuda`` can reach them. ``select`` walks the enabled backends in priority order and
asks each one's rules (``reasons``) whether it can take the call; the first with no objection runs.

The rules are PyTorch's CPU rules for its flash kernel (4-dim inputs, no dropout, equal batch sizes,
equal heads unless ``enable_gqa``, a 2- or 4-dim mask that broadcasts and needs no gradient, equal
head dims, no empty sequence, unit last-dim strides, float32/float64/bfloat16/float16). Ember adds
``EFFICIENT_ATTENTION`` on the CPU: the same kernel with any broadcastable boolean or additive mask
and with Philox dropout. ``CUDNN_ATTENTION`` never runs here. The default priority is PyTorch's
CUDA order (flash, efficient, math, cuDNN); its CPU order has no efficient backend.
"""

from __future__ import annotations

import enum
import logging

from ember.core import dtypes as D

__all__ = ["SDPBackend", "explain", "is_enabled", "priority_order", "reasons", "select", "set_enabled"]

log = logging.getLogger(__name__)


class SDPBackend(enum.IntEnum):
    """The attention backends, numbered as PyTorch numbers them."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


DEFAULT_ORDER = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
    SDPBackend.CUDNN_ATTENTION,
)
_enabled = dict.fromkeys((*DEFAULT_ORDER, SDPBackend.OVERRIDEABLE), True)
_order = list(DEFAULT_ORDER)


def is_enabled(backend: SDPBackend) -> bool:
    return _enabled[SDPBackend(backend)]


def set_enabled(backend: SDPBackend, enabled: bool) -> None:
    _enabled[SDPBackend(backend)] = bool(enabled)


def priority_order() -> list[SDPBackend]:
    return list(_order)


def set_priority_order(order) -> None:
    order = [SDPBackend(b) for b in order]
    _order[:] = order + [b for b in DEFAULT_ORDER if b not in order]


def state() -> tuple[dict, list]:
    """The flags and the order, to restore with ``restore`` (what ``sdpa_kernel`` does on exit)."""
    return dict(_enabled), list(_order)


def restore(saved: tuple[dict, list]) -> None:
    _enabled.update(saved[0])
    _order[:] = saved[1]


# -- the rules --------------------------------------------------------------------------------------

_FLOATS = (D.float32, D.float64, D.bfloat16, D.float16)
_CUDA_FLOATS = (D.float32, D.bfloat16, D.float16)


def _dtype(t) -> str:
    return D.SCALAR_TYPE_NAMES.get(t.dtype, str(t.dtype)).lower().replace("double", "float64")


def _shared_rules(q, k, v, mask, enable_gqa) -> list[str]:
    """What both kernels need of q, k, v and the mask's gradient; each failure is one reason."""
    out = []
    if not (q.ndim == k.ndim == v.ndim == 4):
        return [f"query, key and value must be 4-dimensional, got {q.ndim}, {k.ndim} and {v.ndim} dims"]
    if not (q.shape[0] == k.shape[0] == v.shape[0]):
        out.append(f"query, key and value batch sizes differ ({q.shape[0]}, {k.shape[0]}, {v.shape[0]})")
    hq, hk, hv = q.shape[1], k.shape[1], v.shape[1]
    if enable_gqa:
        if hk != hv or hk == 0 or hq % hk:
            out.append(f"enable_gqa needs key/value heads ({hk}, {hv}) equal and dividing the query's {hq}")
    elif not (hq == hk == hv):
        out.append(f"query, key and value have {hq}, {hk} and {hv} heads and enable_gqa is False")
    if not (q.shape[3] == k.shape[3] == v.shape[3]):
        out.append(f"head dims differ (query {q.shape[3]}, key {k.shape[3]}, value {v.shape[3]})")
    if q.shape[2] == 0 or k.shape[2] == 0:
        out.append(f"a sequence length is 0 (query {q.shape[2]}, key {k.shape[2]})")
    if q.dtype not in _FLOATS:
        out.append(f"query has dtype {_dtype(q)}; the kernels take float32, float64, bfloat16, float16")
    if mask is not None and mask.requires_grad:
        out.append("attn_mask requires grad; the kernels give no gradient for the mask")
    return out


def _mask_fits(mask, q, k, flash: bool) -> str | None:
    b, h, sq, skv = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    target = (b, h, sq, skv)
    if flash and mask.ndim not in (2, 4):
        return f"attn_mask has {mask.ndim} dims; the flash kernel takes 2 or 4 (EFFICIENT_ATTENTION takes any)"
    if mask.ndim > 4 or any(m not in (1, t) for m, t in zip(reversed(mask.shape), reversed(target), strict=False)):
        return f"attn_mask of shape {list(mask.shape)} does not broadcast to {list(target)}"
    return None


def reasons(backend: SDPBackend, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, enable_gqa=False):
    """Why ``backend`` cannot take this call: a list of reasons, empty when it can."""
    backend = SDPBackend(backend)
    out = [] if _enabled[backend] else ["disabled (by sdpa_kernel or ember.backends.cuda's enable flags)"]
    device = q.device.type
    if backend is SDPBackend.MATH:
        if attn_mask is not None and is_causal:
            out.append("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
        return out
    if backend is SDPBackend.CUDNN_ATTENTION:
        return [*out, "cuDNN attention is not available in Ember"]
    if backend is SDPBackend.OVERRIDEABLE:
        return [*out, "no backend has overridden scaled_dot_product_attention"]
    out += _shared_rules(q, k, v, attn_mask, enable_gqa)
    flash = backend is SDPBackend.FLASH_ATTENTION
    if flash and dropout_p > 0.0:
        out.append(f"dropout_p is {dropout_p}; the flash kernel has no dropout (EFFICIENT_ATTENTION has)")
    if flash and any(t.ndim == 4 and t.stride(-1) != 1 for t in (q, k, v)):
        out.append("query, key and value must have stride 1 in their last dim")
    if attn_mask is not None and q.ndim == 4:
        if attn_mask.dtype not in (D.bool_, q.dtype, D.float32):
            out.append(f"attn_mask has dtype {_dtype(attn_mask)}; it must be bool, float32 or the query's {_dtype(q)}")
        problem = _mask_fits(attn_mask, q, k, flash)
        if problem:
            out.append(problem)
        elif flash and attn_mask.dtype is not D.bool_ and attn_mask.ndim and attn_mask.stride(-1) != 1:
            out.append(f"attn_mask has stride {attn_mask.stride(-1)} in its last dim, the flash kernel needs 1")
    if device == "cuda":
        if not flash:
            out.append("no CUDA kernel (Ember's CUDA kernel is FLASH_ATTENTION's)")
        else:
            if attn_mask is not None:
                out.append("the CUDA flash kernel takes no attn_mask")
            if q.dtype not in _CUDA_FLOATS:
                out.append(f"the CUDA flash kernel takes float32, bfloat16, float16, not {_dtype(q)}")
            if is_causal and q.ndim == 4 and q.shape[2] != k.shape[2]:
                out.append("the CUDA flash kernel's is_causal needs equal query and key lengths")
    elif device not in ("cpu", "meta"):
        out.append(f"no kernel for device {device}")
    return out


# How PyTorch's C++ messages print dtypes.
_CPP_NAMES = {
    D.float32: "float",
    D.float64: "double",
    D.float16: "c10::Half",
    D.bfloat16: "c10::BFloat16",
    D.int64: "long int",
    D.int32: "int",
    D.int16: "short int",
    D.int8: "signed char",
    D.uint8: "unsigned char",
    D.bool_: "bool",
}


def _dtype_name(dtype) -> str:
    return _CPP_NAMES.get(dtype) or D.SCALAR_TYPE_NAMES.get(dtype, str(dtype))


def invalid(q, k, v, attn_mask=None, is_causal=False) -> str | None:
    """The error that no backend gets past (PyTorch's checks of the arguments), or None."""
    if not (q.dtype is k.dtype is v.dtype):
        return (
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_dtype_name(q.dtype)} key.dtype: {_dtype_name(k.dtype)} and value.dtype: {_dtype_name(v.dtype)} instead."
        )
    if not (q.device == k.device == v.device):
        return (
            "Expected query, key, and value to have the same device type, but got query.device: "
            f"{q.device} key.device: {k.device} and value.device: {v.device} instead."
        )
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        return (
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
            f"{q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} instead."
        )
    if attn_mask is not None and attn_mask.dtype not in (D.bool_, q.dtype, D.float32):
        return (
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: "
            f"{_dtype_name(attn_mask.dtype)} and  query.dtype: {_dtype_name(q.dtype)} instead."
        )
    return None


def explain(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """(backend that would run or ERROR, {backend: reasons} for each backend passed over)."""
    error = invalid(q, k, v, attn_mask, is_causal)
    if error is not None:
        return SDPBackend.ERROR, {b: [error] for b in _order}
    rejected = {}
    for backend in _order:
        why = reasons(backend, q, k, v, attn_mask, dropout_p, is_causal, enable_gqa)
        if not why:
            return backend, rejected
        rejected[backend] = why
    return SDPBackend.ERROR, rejected


def format_reasons(rejected: dict) -> str:
    return "\n".join(f"  {b.name}: {r}" for b, why in rejected.items() for r in why)


_logged: set = set()


def select(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, enable_gqa=False) -> SDPBackend:
    """The backend to run; a RuntimeError listing every reason when none of the enabled ones can."""
    error = invalid(q, k, v, attn_mask, is_causal)
    if error is not None:
        raise RuntimeError(error)
    backend, rejected = explain(q, k, v, attn_mask, dropout_p, is_causal, None, enable_gqa)
    if backend is SDPBackend.ERROR:
        raise RuntimeError(
            "scaled_dot_product_attention: no available kernel; each backend was passed over because:\n"
            + format_reasons(rejected)
        )
    if log.isEnabledFor(logging.INFO):
        _log_once(backend, rejected, q, k, v, attn_mask, dropout_p, is_causal, enable_gqa)
    return backend


def _log_once(backend, rejected, q, k, v, attn_mask, dropout_p, is_causal, enable_gqa) -> None:
    def sig(t):
        return None if t is None else (tuple(t.shape), t.dtype, t.device.type, t.requires_grad)

    key = (backend, sig(q), sig(k), sig(v), sig(attn_mask), dropout_p > 0, bool(is_causal), bool(enable_gqa))
    if key in _logged or len(_logged) > 4096:
        return
    _logged.add(key)
    log.info(
        "scaled_dot_product_attention(query %s %s, key %s, value %s, attn_mask %s, dropout_p=%s, is_causal=%s, "
        "enable_gqa=%s) runs %s%s",
        list(q.shape),
        _dtype(q),
        list(k.shape),
        list(v.shape),
        None if attn_mask is None else f"{list(attn_mask.shape)} {_dtype(attn_mask)}",
        dropout_p,
        is_causal,
        enable_gqa,
        backend.name,
        "" if not rejected else "; passed over:\n" + format_reasons(rejected),
    )
