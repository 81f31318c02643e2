"""Process-wide numeric settings of PyTorch's top level: ``set_float32_matmul_precision`` and
``use_deterministic_algorithms`` with their getters, re-exported as ``ember.<name>``.

The values are stored and reported as PyTorch reports them; on the CPU they change nothing: Ember's
CPU matmul always computes float32 in full float32 ("highest"), and its CPU kernels are
deterministic whatever the setting (PyTorch's CPU build is in the same position for almost every
op). ``ember.backends.cuda.matmul.allow_tf32`` is another view of the matmul precision, as in
PyTorch: True whenever the precision is not "highest".
"""

from __future__ import annotations

import warnings

__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_deterministic_debug_mode",
    "get_float32_matmul_precision",
    "is_deterministic_algorithms_warn_only_enabled",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "use_deterministic_algorithms",
]

_PRECISIONS = ("highest", "high", "medium")
_state = {"precision": "highest", "deterministic": False, "warn_only": False}


def set_float32_matmul_precision(precision: str) -> None:
    """ "highest" (float32 throughout), "high" (TF32 or bfloat16x3 allowed) or "medium" (bfloat16
    allowed) for float32 matrix products. Stored only: no Ember kernel computes below float32."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; "
            "the current setFloat32MatmulPrecision call has no effect.",
            stacklevel=2,
        )
        return
    _state["precision"] = precision


def get_float32_matmul_precision() -> str:
    return _state["precision"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic kernels. Stored only: Ember's CPU kernels are all deterministic."""
    if not isinstance(mode, bool):
        raise TypeError(
            f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not {type(mode).__name__}"
        )
    if not isinstance(warn_only, bool):
        raise TypeError(
            f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not {type(warn_only).__name__}"
        )
    _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``use_deterministic_algorithms`` by level: 0 or "default" off, 1 or "warn" warn only, 2 or "error" on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2
