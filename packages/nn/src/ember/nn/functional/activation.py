"""Activations with ``torch.nn.functional``'s signatures.

relu, gelu, silu, mish, tanh and sigmoid are ops of the core. The others are composites: a
``where`` that picks a branch per element, with PyTorch's gradient at the kinks (the branch a
``where`` does not pick gets a zero gradient). A branch that could overflow where it is not picked
(``expm1`` of a large input, say) is computed on a clamped input, so that its zero gradient does not
meet an infinity and become NaN. ``inplace=True`` writes the result into the input with ``copy_``.
"""

from __future__ import annotations

from ember.core.aten.pointwise.ternary import where_function as _where
from ember.core.dispatch import ops
from ember.core.tensor import Tensor


def _finish(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    return input.copy_(result) if inplace else result


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return ops.aten.gelu.default(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return ops.aten.silu_.default(input) if inplace else ops.aten.silu.default(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return ops.aten.mish_.default(input) if inplace else ops.aten.mish.default(input)


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _finish(input, _where(input > 0, input, input * negative_slope), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    # Not clamp: hardtanh's gradient is zero at the bounds themselves, clamp's is not.
    result = _where(input <= min_val, min_val, _where(input >= max_val, max_val, input))
    return _finish(input, result.to(input.dtype), inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    negative = input.clamp_max(0).expm1() * alpha
    return _finish(input, _where(input > 0, input, negative), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    negative = (input.clamp_max(0) / alpha).expm1() * alpha
    return _finish(input, _where(input > 0, input, negative), inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    negative = input.clamp_max(0).expm1() * _SELU_ALPHA
    return _finish(input, _where(input > 0, input, negative) * _SELU_SCALE, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    scaled = input * beta
    smooth = scaled.clamp_max(threshold).exp().log1p() / beta
    return _where(scaled > threshold, input, smooth)


def logsigmoid(input: Tensor) -> Tensor:
    # -softplus(-x): the threshold branch keeps exp from overflowing for very negative x.
    return -softplus(-input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.ndim} is size {input.shape[dim]}"
        )
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """leaky_relu with a learned slope: one for all channels, or one per channel (dim 1)."""
    if weight.numel() != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {weight.numel()} "
                f"and channel size = {channels}."
            )
        if input.ndim >= 2:
            weight = weight.reshape(channels, *([1] * (input.ndim - 2)))
    return _where(input > 0, input, weight * input)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    from ember.core.functional import softmax

    return softmax(-input if dtype is None else -input.to(dtype), dim, _stacklevel + 1)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    result = _where(input <= -3, 0.0, _where(input >= 3, 1.0, input / 6 + 0.5)).to(input.dtype)
    return _finish(input, result, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    result = _where(input <= -3, 0.0, _where(input >= 3, input, input * (input + 3) / 6)).to(input.dtype)
    return _finish(input, result, inplace)
