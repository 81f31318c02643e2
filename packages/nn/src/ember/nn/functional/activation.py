"""Activations with ``torch.nn.functional``'s signatures.

relu, gelu, silu, mish, tanh and sigmoid are ops of the core. The others are composites: a
``where`` that picks a branch per element, with PyTorch's gradient at the kinks (the branch a
``where`` does not pick gets a zero gradient). A branch that could overflow where it is not picked
(``expm1`` of a large input, say) is computed on a clamped input, so that its zero gradient does not
meet an infinity and become NaN. ``inplace=True`` writes the result into the input with ``copy_``.
"""

from __future__ import annotations

import numpy as np

from ember.autograd import no_grad
from ember.core.aten.factories.factories import empty_like
from ember.core.aten.pointwise.ternary import where_function as _where
from ember.core.dispatch import ops
from ember.core.tensor import Tensor


def _finish(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    return input.copy_(result) if inplace else result


def _source(input: Tensor, inplace: bool) -> Tensor:
    """What an activation computes from: for ``inplace=True`` under autograd, a copy, so that the
    tensors its parts save are not the one ``_finish`` then overwrites."""
    return input.clone() if inplace and input.requires_grad else input


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
    x = _source(input, inplace)
    return _finish(input, _where(x > 0, x, x * negative_slope), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    x = _source(input, inplace)
    # Not clamp: hardtanh's gradient is zero at the bounds themselves, clamp's is not.
    result = _where(x <= min_val, min_val, _where(x >= max_val, max_val, x))
    return _finish(input, result.to(input.dtype), inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    x = _source(input, inplace)
    negative = x.clamp_max(0).expm1() * alpha
    return _finish(input, _where(x > 0, x, negative), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    x = _source(input, inplace)
    negative = (x.clamp_max(0) / alpha).expm1() * alpha
    return _finish(input, _where(x > 0, x, negative), inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    x = _source(input, inplace)
    negative = x.clamp_max(0).expm1() * _SELU_ALPHA
    return _finish(input, _where(x > 0, x, negative) * _SELU_SCALE, inplace)


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
    x = _source(input, inplace)
    result = _where(x <= -3, 0.0, _where(x >= 3, 1.0, x / 6 + 0.5)).to(input.dtype)
    return _finish(input, result, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    x = _source(input, inplace)
    result = _where(x <= -3, 0.0, _where(x >= 3, x, x * (x + 3) / 6)).to(input.dtype)
    return _finish(input, result, inplace)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where it is above ``threshold``, ``value`` elsewhere."""
    x = _source(input, inplace)
    return _finish(input, _where(x > threshold, x, value).to(input.dtype), inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return globals()["threshold"](input, threshold, value, inplace=True)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, zero elsewhere."""
    return _where(input.abs() > lambd, input, 0.0).to(input.dtype)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` moved ``lambd`` toward zero, and zero within ``[-lambd, lambd]``."""
    if lambd < 0:
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}
        kind = str(input.dtype).split(".")[-1]
        top = float(np.finfo(np.float32 if kind == "bfloat16" else kind).max) if kind in names else float("inf")
        raise RuntimeError(
            f"lambda must be in range [0, {top:g}] for input dtype {names.get(kind, kind)}, but found {lambd:g}"
        )
    shrunk = _where(input > lambd, input - lambd, _where(input < -lambd, input + lambd, 0.0))
    return shrunk.to(input.dtype)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """leaky_relu whose negative slope is drawn uniformly from ``[lower, upper]`` per element in
    training, and is their mean in evaluation."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    x = _source(input, inplace)
    with no_grad():
        slopes = empty_like(x).uniform_(lower, upper)
    return _finish(input, _where(x > 0, x, x * slopes), inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution; ``hard=True`` returns one-hot rows whose gradient
    is the soft sample's (the straight-through estimator)."""
    from ember.core.functional import softmax

    with no_grad():
        gumbels = -empty_like(logits).exponential_().log()
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    one_hot = soft.new_zeros(soft.shape).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft
