"""Anomaly mode: remember where each node's forward ran, and stop at the first NaN gradient.

With ``detect_anomaly()`` on, every recorded node keeps the stack of the forward call that made it;
a backward that produces NaN raises ``RuntimeError("Function 'MulBackward0' returned nan values in
its 0th output.")`` after warning with that forward stack, so the op to blame is named.
"""

from __future__ import annotations

import threading
import traceback
import warnings


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


state = _State()


def is_anomaly_enabled() -> bool:
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return state.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for the thread (``torch.set_anomaly_enabled``)."""
    state.enabled, state.check_nan = enabled, check_nan


class detect_anomaly:
    """Context manager (and decorator) turning anomaly detection on."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = (False, True)
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
            "for debugging.",
            UserWarning,
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self.prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = True, self.check_nan

    def __exit__(self, *exc) -> None:
        state.enabled, state.check_nan = self.prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def call(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return call


class set_detect_anomaly:
    """Turn anomaly detection on or off, now and (as a context manager) for a block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = mode, check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        state.enabled, state.check_nan = self.prev


def remember(node) -> None:
    node._anomaly_trace = "".join(traceback.format_stack()[:-3])


def check(node, grads: tuple) -> None:
    """Raise if ``node`` produced a NaN gradient (anomaly mode with NaN checks)."""
    if not state.check_nan:
        return
    for i, g in enumerate(grads):
        if g is None or g.dtype.category < 2:  # integers cannot hold NaN
            continue
        if bool(g.isnan().any()):
            trace = getattr(node, "_anomaly_trace", None)
            if trace:
                warnings.warn(
                    f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{trace}",
                    UserWarning,
                    stacklevel=2,
                )
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
