"""The device checks shared by ``scatter``, ``gather``, ``replicate``, ``parallel_apply`` and ``comm``.

These functions move tensors between several accelerators in one process. Ember drives at most one
device per process, so their tensor work never runs here: where PyTorch's CPU build refuses (a ``cpu``
target, CPU tensors to gather or broadcast, no accelerator at all), the same errors are raised, and with
an accelerator the error says that several devices in one process are not supported. What involves no
tensor (splitting non-tensor arguments per device) works as in PyTorch.
"""

from __future__ import annotations

from typing import Any

from ember.core.devices import device as _device


def device_type(target: Any) -> str:
    """The device type a target names: ints are accelerator indices."""
    if isinstance(target, int):
        return "cuda"
    return _device(target).type if isinstance(target, str) else getattr(target, "type", "cuda")


def check_targets(targets: Any, expected: str = "non cpu") -> None:
    """PyTorch's refusal of a ``cpu`` target: ``Expected a non cpu device, but got: cpu``."""
    for target in targets or ():
        if target is not None and device_type(target) == "cpu":
            raise ValueError(f"Expected a {expected} device, but got: cpu")


def no_several_devices(what: str) -> RuntimeError:
    """The error for tensor work across accelerators: none available, or several per process unsupported."""
    from ember.nn.parallel.data_parallel import _accelerator

    if _accelerator() is None:
        return RuntimeError("Cannot access accelerator device when none is available.")
    return RuntimeError(
        f"{what} moves tensors between several devices of one process, which Ember does not do: run one "
        "process per device (ember.distributed) instead"
    )


def check_on_accelerator(tensors: Any, message: str) -> None:
    """PyTorch's assertion that the tensors of a gather or broadcast are not CPU tensors."""
    for t in tensors:
        if t.device.type == "cpu":
            raise AssertionError(message)
