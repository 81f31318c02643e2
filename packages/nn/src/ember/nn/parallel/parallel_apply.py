"""``parallel_apply``: each module of a list on its inputs, in threads, one per device. PyTorch runs it
on accelerators only (each thread on its device); without one, as in its CPU build, it refuses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.nn.modules.module import Module
from ember.nn.parallel._devices import check_targets, no_several_devices

__all__ = ["parallel_apply"]


def parallel_apply(
    modules: Sequence[Module],
    inputs: Sequence[Any],
    kwargs_tup: Sequence[dict[str, Any]] | None = None,
    devices: Sequence[Any] | None = None,
) -> list[Any]:
    """``modules[i](*inputs[i], **kwargs_tup[i])`` on ``devices[i]``, each in its own thread."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs {len(inputs)}")
    if kwargs_tup is not None and len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to {len(kwargs_tup)}")
    if devices is not None:
        if len(modules) != len(devices):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to {len(devices)}")
        check_targets(devices, "cuda")
    raise no_several_devices("parallel_apply")
