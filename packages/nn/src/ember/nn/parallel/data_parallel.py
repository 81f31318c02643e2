"""``DataParallel``: PyTorch's single-process data parallelism, on the one device Ember uses.

PyTorch's ``DataParallel`` splits each batch over several GPUs, runs a replica per GPU and gathers
the outputs. Ember drives one device per process, so the wrapper runs the whole batch through the
module on ``device_ids[0]`` and puts the output on ``output_device``: the numbers are those of the
split run (each sample's output does not depend on the others'), and the wrapper's interface is
PyTorch's (``module``, ``device_ids``, ``output_device``, ``dim``, state dict keys under
``module.``). Without an accelerator, as in PyTorch's CPU build, ``device_ids`` is empty and the
module runs as it is.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ember.core.devices import device
from ember.nn.modules.module import Module


def _accelerator():
    """The CUDA plugin (the one accelerator Ember knows) when it has a device, else None."""
    from ember.core.devices import get_backend

    backend = get_backend("cuda")
    count = getattr(backend, "device_count", None)
    return backend if count is not None and count() > 0 else None


def _index(device: Any) -> int:
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    return 0 if index is None else index


def _move(value: Any, device: Any) -> Any:
    from ember.core.tensor import Tensor

    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_move(v, device) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_move(v, device) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _move(v, device)) for k, v in value.items())
    return value


class DataParallel(Module):
    """Wrap ``module`` for data parallelism; see the module notes for what runs where."""

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[int | Any] | None = None,
        output_device: int | Any | None = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        accelerator = _accelerator()
        if accelerator is None:
            self.device_ids: list[int] = []
            self.output_device = None
            return
        if device_ids is None:
            device_ids = list(range(accelerator.device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.device_ids = [_index(d) for d in device_ids]
        self.output_device = _index(output_device)
        self.src_device_obj = device("cuda", self.device_ids[0])
        if len(self.device_ids) > 1:
            warnings.warn(
                f"DataParallel runs the whole batch on {self.src_device_obj}: Ember drives one device per "
                "process (use DistributedDataParallel-style training with one process per device to use several)",
                UserWarning,
                stacklevel=2,
            )
        for tensor in (*module.parameters(), *module.buffers()):
            if tensor.device != self.src_device_obj:
                raise RuntimeError(
                    f"module must have its parameters and buffers on device {self.src_device_obj} (device_ids[0]) "
                    f"but found one of them on device: {tensor.device}"
                )

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        inputs, kwargs = _move(inputs, self.src_device_obj), _move(kwargs, self.src_device_obj)
        return _move(self.module(*inputs, **kwargs), device("cuda", self.output_device))


def data_parallel(
    module: Module,
    inputs: Any,
    device_ids: Sequence[int | Any] | None = None,
    output_device: int | Any | None = None,
    dim: int = 0,
    module_kwargs: Any = None,
) -> Any:
    """The functional form of ``DataParallel``: ``module(*inputs, **module_kwargs)`` on the accelerator."""
    if _accelerator() is None:
        raise RuntimeError("device type could not be determined")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    wrapper = DataParallel(module, device_ids, output_device, dim)
    return wrapper(*inputs, **(module_kwargs or {}))
