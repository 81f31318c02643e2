"""``SparseAdam``: Adam for sparse gradients (``Embedding(sparse=True)``), updating only the rows present.

Each step coalesces the gradient and updates the moments and the parameter at its indices only, with
PyTorch's arithmetic in PyTorch's order (the moments' updates are computed on the stored values and
added as sparse tensors), so that training matches PyTorch's step for step. Dense gradients are
refused with PyTorch's error.
"""

from __future__ import annotations

import math
from typing import Any

from ember.core.aten.factories.factories import zeros_like
from ember.optim.adamax import check_betas
from ember.optim.optimizer import Optimizer, check_tensor_lr, step_without_grad

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        if not lr > 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps > 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        complex_params = [
            [index, p_index]
            for index, group in enumerate(self.param_groups)
            for p_index, p in enumerate(group["params"])
            if p.is_complex()
        ]
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support complex parameters"
            )

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                state["step"] += 1
                _sparse_adam_update(
                    p,
                    p.grad,
                    state["exp_avg"],
                    state["exp_avg_sq"],
                    state["step"],
                    beta1,
                    beta2,
                    group["lr"],
                    group["eps"],
                    group["maximize"],
                )
        return loss


def _sparse_adam_update(param, grad, exp_avg, exp_avg_sq, step: int, beta1, beta2, lr, eps, maximize: bool) -> None:
    from ember.core.sparse.construct import _sparse_coo_tensor_unsafe

    grad = grad.coalesce()
    if maximize:
        grad = -grad
    indices, values = grad._indices(), grad._values()
    if values.numel() == 0:
        return
    size = tuple(grad.shape)

    def make_sparse(v):
        return _sparse_coo_tensor_unsafe(indices, v, size)

    old_exp_avg = exp_avg.sparse_mask(grad)._values()
    exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
    exp_avg.add_(make_sparse(exp_avg_update))
    old_exp_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
    exp_avg_sq.add_(make_sparse(exp_avg_sq_update))

    numer = exp_avg_update.add_(old_exp_avg)
    exp_avg_sq_update.add_(old_exp_avg_sq)
    denom = exp_avg_sq_update.sqrt_().add_(eps)
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    param.add_(make_sparse(-step_size * numer.div_(denom)))
