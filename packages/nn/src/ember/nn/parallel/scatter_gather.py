"""``scatter``, ``scatter_kwargs`` and ``gather``: splitting a call's arguments over devices and joining
the outputs. Structures (tuples, lists, dicts, named tuples) split as in PyTorch and other objects are
repeated per device; tensors need several accelerators (see ``_devices``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.core.tensor import Tensor
from ember.nn.parallel._devices import check_on_accelerator, check_targets, no_several_devices

__all__ = ["gather", "is_namedtuple", "scatter", "scatter_kwargs"]


def is_namedtuple(obj: Any) -> bool:
    """Whether ``obj`` is a named tuple (``collections.namedtuple`` or ``typing.NamedTuple``)."""
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _scatter_tensor(tensor: Tensor, target_gpus: Sequence[Any], dim: int) -> list[Tensor]:
    check_targets(target_gpus)
    raise no_several_devices("scatter")


def scatter(inputs: Any, target_gpus: Sequence[Any], dim: int = 0) -> Any:
    """Split tensors into chunks along ``dim``, one per target device; repeat other objects."""

    def split(obj: Any) -> list:
        if isinstance(obj, Tensor):
            return _scatter_tensor(obj, target_gpus, dim)
        if is_namedtuple(obj):
            return [type(obj)(*parts) for parts in zip(*map(split, obj), strict=False)]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(split, obj), strict=False))
        if isinstance(obj, list) and obj:
            return [list(parts) for parts in zip(*map(split, obj), strict=False)]
        if isinstance(obj, dict) and obj:
            return [type(obj)(parts) for parts in zip(*map(split, obj.items()), strict=False)]
        return [obj for _ in target_gpus]

    return split(inputs)


def scatter_kwargs(
    inputs: tuple[Any, ...], kwargs: dict[str, Any] | None, target_gpus: Sequence[Any], dim: int = 0
) -> tuple[tuple[Any, ...], tuple[dict[str, Any], ...]]:
    """``scatter`` of the positional and keyword arguments, padded to the same number of devices."""
    scattered = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered) < len(scattered_kwargs):
        scattered.extend(() for _ in range(len(scattered_kwargs) - len(scattered)))
    elif len(scattered_kwargs) < len(scattered):
        scattered_kwargs.extend({} for _ in range(len(scattered) - len(scattered_kwargs)))
    return tuple(scattered), tuple(scattered_kwargs)


def gather(outputs: Any, target_device: Any, dim: int = 0) -> Any:
    """Join the outputs of each device's replica on ``target_device``, concatenating tensors along ``dim``."""

    def join(parts: Sequence[Any]) -> Any:
        first = parts[0]
        if isinstance(first, Tensor):
            check_on_accelerator(parts, "Gather function not implemented for CPU tensors")
            raise no_several_devices("gather")
        if first is None:
            return None
        if isinstance(first, dict):
            if not all(len(first) == len(d) for d in parts):
                raise ValueError("All dicts must have the same number of keys")
            return type(first)((k, join([d[k] for d in parts])) for k in first)
        if is_namedtuple(first):
            return type(first)._make(map(join, zip(*parts, strict=False)))
        return type(first)(map(join, zip(*parts, strict=False)))

    return join(outputs)
