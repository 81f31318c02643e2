"""``nn.factory_kwargs``: the ``device``/``dtype``/``memory_format`` keyword arguments of a module
constructor gathered into one dict, as PyTorch's module authors use it."""

from __future__ import annotations

from typing import Any

__all__ = ["factory_kwargs"]


def factory_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``kwargs``'s factory arguments, merged with those under its ``factory_kwargs`` key."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    expected = simple | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    result = dict(kwargs.get("factory_kwargs", {}))
    for key in simple:
        if key in kwargs:
            if key in result:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            result[key] = kwargs[key]
    return result
