"""``GradScaler``: scale the loss so float16 gradients do not underflow, and skip steps that overflow.

Each iteration: ``scaler.scale(loss).backward()``, optionally ``scaler.unscale_(opt)`` (to clip),
``scaler.step(opt)`` (unscales if not done yet, and steps only when every gradient is finite), and
``scaler.update()`` (halves the scale after an overflow, doubles it after ``growth_interval`` clean
steps). The scale and the growth tracker are tensors, as in PyTorch, so a compiled step can keep
them on the device.
"""

from __future__ import annotations

import sys
import warnings
from enum import Enum

from ember.nn._ops import ops


class _Stage(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": _Stage.READY, "found_inf": None}


class GradScaler:
    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not _cuda_available():
            warnings.warn(
                "ember.amp.GradScaler is enabled for 'cuda', but CUDA is not available.  Disabling.",
                UserWarning,
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale = None
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer_states: dict[int, dict] = {}

    # -- scaling ------------------------------------------------------------------------------

    def _lazy_init(self, device) -> None:
        self._scale = ops.full((), self._init_scale, dtype=ops.float32, device=device)
        self._growth_tracker = ops.full((), self._init_growth_tracker, dtype=ops.int32, device=device)

    def _check_initialized(self, name: str) -> None:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {name} but _scale is None.  This may indicate your script did not use "
                "scaler.scale(loss or outputs) earlier in the iteration."
            )

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists and tuples of them) times the current scale."""
        if not self._enabled:
            return outputs

        def apply(value):
            if isinstance(value, ops.Tensor):
                if self._scale is None:
                    self._lazy_init(value.device)
                return value * self._scale.to(device=value.device)
            if isinstance(value, list | tuple):
                scaled = [apply(v) for v in value]
                return type(value)(scaled) if isinstance(value, tuple) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, noting infs."""
        if not self._enabled:
            return
        self._check_initialized("unscale_")
        state = self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())
        if state["stage"] is _Stage.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = (1.0 / self._scale.double()).float()
        found_inf = ops.zeros((), dtype=ops.float32, device=self._scale.device)
        with ops.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if grad.dtype == ops.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if not bool(ops.isfinite(grad).all()):
                        found_inf.fill_(1.0)
                    grad.mul_(inv_scale.to(grad.dtype))
        state["found_inf"] = found_inf
        state["stage"] = _Stage.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(...)`` unless a gradient is inf or nan; returns what it returned, or None."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_initialized("step")
        state = self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _Stage.READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if float(state["found_inf"]) == 0.0:
            result = optimizer.step(*args, **kwargs)
        state["stage"] = _Stage.STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given, else back off or grow."""
        if not self._enabled:
            return
        self._check_initialized("update")
        if new_scale is not None:
            if isinstance(new_scale, float | int):
                self._scale.fill_(float(new_scale))
            else:
                if not (
                    isinstance(new_scale, ops.Tensor)
                    and new_scale.numel() == 1
                    and new_scale.dtype == ops.float32
                    and not new_scale.requires_grad
                ):
                    raise AssertionError(
                        "new_scale should be a float or a 1-element float32 tensor with requires_grad=False."
                    )
                self._scale.copy_(new_scale.reshape(()))
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(float(f) != 0.0 for f in found))
        self._per_optimizer_states = {}

    def _update_scale(self, found_inf: bool) -> None:
        if found_inf:
            self._scale.mul_(self._backoff_factor)
            self._growth_tracker.fill_(0)
            return
        successful = int(self._growth_tracker) + 1
        if successful == self._growth_interval:
            grown = float(self._scale) * self._growth_factor
            if grown != float("inf"):
                self._scale.fill_(grown)
            successful = 0
        self._growth_tracker.fill_(successful)

    # -- settings and state --------------------------------------------------------------------

    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker)

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)


def _cuda_available() -> bool:
    cuda = sys.modules.get("ember.cuda")  # only if the program has it: importing it is not ours to do
    try:
        return bool(cuda is not None and cuda.is_available())
    except Exception:
        return False
