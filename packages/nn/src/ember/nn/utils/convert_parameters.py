"""``parameters_to_vector`` (one flat copy of every parameter) and ``vector_to_parameters`` (each
parameter becomes a view of its slice of the vector, as ``param.data = ...`` makes it in PyTorch)."""

from __future__ import annotations

from collections.abc import Iterable

from ember.core.aten.shape.joining import cat_function
from ember.core.tensor import Tensor
from ember.nn.parameter import swap_payload

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param: Tensor, device) -> object:
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError(
            f"Found two parameters on different devices, this is currently not supported. Got {device} and {param.device}"
        )
    return device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    device = None
    flat = []
    for param in parameters:
        device = _check_same_device(param, device)
        flat.append(param.reshape(-1))
    return cat_function(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        swap_payload(param, vec[pointer : pointer + n].detach().view(param.shape))
        pointer += n
