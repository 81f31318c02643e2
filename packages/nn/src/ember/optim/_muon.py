"""``Muon``: momentum SGD for 2-D weights whose update is orthogonalized (its singular values pushed
towards 1) by a few Newton-Schulz iterations, run in bfloat16 as PyTorch runs them. Only the loop
form exists, as in PyTorch (``foreach`` is refused there too)."""

from __future__ import annotations

import math
from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_like
from ember.core.tensor import Tensor
from ember.optim.optimizer import Optimizer, check_tensor_lr, step_without_grad

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    from ember.core.api import functions

    return functions["addmm"](input, mat1, mat2, beta=beta, alpha=alpha)


def _zeropower_via_newtonschulz(
    grad: Tensor, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float
) -> Tensor:
    """An approximately orthogonal matrix with ``grad``'s singular vectors (the quintic iteration)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    ortho = grad.to(dtype=D.bfloat16)
    tall = grad.size(0) > grad.size(1)
    if tall:  # iterate on the wide orientation, whose Gram matrix is the smaller one
        ortho = ortho.T
    ortho.div_(ortho.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = ortho @ ortho.T
        gram_update = _addmm(gram, gram, gram, beta=b, alpha=c)
        ortho = _addmm(ortho, gram_update, ortho, beta=a)
    return ortho.T if tall else ortho


def _adjust_lr(lr: float, adjust_lr_fn: str | None, param_shape: Any) -> float:
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        check_tensor_lr(lr)
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not momentum >= 0.0:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(
            lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov, ns_coefficients=ns_coefficients,
            eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn,
        )  # fmt: skip
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {p.size()}"
                    )

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, weight_decay, momentum = float(group["lr"]), group["weight_decay"], group["momentum"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                if param.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                grad = param.grad
                state = self.state[param]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = zeros_like(grad)
                buf = state["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
                param.mul_(1 - lr * weight_decay)
                param.add_(update, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], param.shape))
        return loss
