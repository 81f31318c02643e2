"""Gradient clipping: scale all gradients together so that their joint norm is at most ``max_norm``,
or clamp each gradient element into ``[-clip_value, clip_value]``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

from ember.autograd import no_grad
from ember.core.aten.shape.joining import _stack_function as stack_function
from ember.core.creation import tensor as make_tensor
from ember.core.dispatch import ops
from ember.core.tensor import Tensor

_vector_norm = ops.aten.linalg_vector_norm.default

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def get_total_norm(
    tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None
) -> Tensor:
    """The ``norm_type`` norm of the norms of ``tensors``: the norm of them all as one vector."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return make_tensor(0.0)
    with no_grad():
        norms = [_vector_norm(t, norm_type) for t in tensors]
        total = _vector_norm(stack_function(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    return total


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach=None,
) -> Tensor:
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``; returns the total norm."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor, foreach=None
) -> None:
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))`` for a given total norm."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp_max(1.0)
        for g in grads:
            g.mul_(coef.to(dtype=g.dtype) if g.dtype is not coef.dtype else coef)


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
    foreach=None,
) -> Tensor:  # fmt: skip
    """Deprecated: ``clip_grad_norm_``."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
