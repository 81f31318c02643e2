"""``torch.nn.functional.linear``: ``input @ weight.T + bias``, through the ``linear`` op's decomposition."""

from __future__ import annotations

from ember.core.aten.linalg.matmul import linear as _linear_op
from ember.core.tensor import Tensor

__all__ = ["linear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    for position, (name, value) in enumerate((("input", input), ("weight", weight)), start=1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"linear(): argument '{name}' (position {position}) must be Tensor, not {type(value).__name__}"
            )
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"linear(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")
    return _linear_op(input, weight, bias)
