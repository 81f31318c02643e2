"""``Variable``: PyTorch's legacy wrapper, which has been the same thing as a tensor since PyTorch
0.4. ``Variable(t)`` gives a new tensor sharing ``t``'s data, detached from its history, with
``requires_grad`` as asked; ``isinstance(x, Variable)`` holds for every tensor."""

from __future__ import annotations

import warnings

from ember.core.tensor import Tensor

__all__ = ["Variable"]


class VariableMeta(type):
    def __instancecheck__(cls, other: object) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    def __new__(cls, data: Tensor | None = None, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            from ember.core.api import functions

            data = functions["empty"](0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if not isinstance(requires_grad, bool):
            raise TypeError(f"Variable(): requires_grad must be a bool, not {type(requires_grad).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
