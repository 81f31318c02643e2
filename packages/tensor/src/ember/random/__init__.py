"""``ember.random``: the default generator's seed and state, and ``fork_rng``, as ``torch.random``.

Every random op draws from a Philox stream given by a generator's ``(seed, offset)``
(``ember.core.generator`` documents the state layout); these functions act on the default one.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Generator as _Iterator

from ember.core.generator import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = [
    "Generator",
    "default_generator",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
]


def _device_module(device_type: str):
    try:
        return importlib.import_module(f"ember.{device_type}")
    except ImportError:
        return None


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices", device_type="cuda"
) -> _Iterator:
    """Run the block with the random states saved, and restore them after it (also on error).

    The CPU's default generator is always saved; ``devices`` names the indices of ``device_type``
    whose generators are saved too (all of them when None), where that device's package offers
    ``get_rng_state``/``set_rng_state``. ``enabled=False`` makes this a no-op.
    """
    if not enabled:
        yield
        return
    if device_type == "meta":
        raise RuntimeError("fork_rng cannot fork the random state of the meta device")
    module = _device_module(device_type)
    saved_devices = []
    if module is not None and hasattr(module, "get_rng_state"):
        if devices is None:
            devices = list(range(module.device_count())) if hasattr(module, "device_count") else []
        saved_devices = [(d, module.get_rng_state(d)) for d in devices]
    elif devices:
        raise RuntimeError(
            f"{_caller}: {_devices_kw}={list(devices)} names {device_type} devices, but ember.{device_type} is not "
            "available"
        )
    cpu_state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in saved_devices:
            module.set_rng_state(state, d)
