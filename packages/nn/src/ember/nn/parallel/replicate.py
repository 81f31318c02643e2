"""``replicate``: a copy of a module per device, sharing its parameters through broadcasts. It needs
several accelerators in one process, which Ember does not drive; the checks PyTorch makes before any
copy (the module's kind, ``cpu`` targets) are the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from ember.nn.modules.module import Module
from ember.nn.parallel._devices import check_on_accelerator, check_targets, no_several_devices

__all__ = ["replicate"]

T = TypeVar("T", bound=Module)


def replicate(network: T, devices: Sequence[Any], detach: bool = False) -> list[T]:
    """Copies of ``network``, one per device of ``devices``."""
    check_targets(devices)
    params = list(network.parameters())
    check_on_accelerator(params, "Broadcast function not implemented for CPU tensors")
    raise no_several_devices("replicate")
