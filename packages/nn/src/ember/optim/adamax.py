"""``Adamax``: Adam with the infinity norm, a running maximum of ``|grad|`` in place of the second moment."""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.aten.pointwise.binary import maximum_function
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["Adamax", "adamax"]


def check_betas(betas: tuple[float, float]) -> None:
    """PyTorch's errors for Adam-family ``betas`` outside [0, 1)."""
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


class Adamax(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        require_nonnegative(("learning rate", lr), ("epsilon value", eps))
        check_betas(betas)
        require_nonnegative(("weight_decay value", weight_decay))
        refuse_unsupported("Adamax", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable,
        )  # fmt: skip
        super().__init__(params, defaults)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_infs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("Adamax does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    state["exp_avg"] = zeros_like(p)
                    state["exp_inf"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(state["exp_avg"])
                exp_infs.append(state["exp_inf"])
                steps.append(state["step"])
            beta1, beta2 = group["betas"]
            run = _multi_tensor_adamax if self._use_foreach(group) else _single_tensor_adamax
            run(
                params, grads, exp_avgs, exp_infs, steps, eps=group["eps"], beta1=beta1, beta2=beta2,
                lr=float(group["lr"]), weight_decay=group["weight_decay"], maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _single_tensor_adamax(params, grads, exp_avgs, exp_infs, steps, *, eps, beta1, beta2, lr, weight_decay, maximize):
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs, steps, strict=True):
        grad = -grad if maximize else grad
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.copy_(maximum_function(exp_inf.mul_(beta2), grad.abs().add_(eps)))
        clr = lr / (1 - beta1 ** step_t.item())
        param.addcdiv_(exp_avg, exp_inf, value=-clr)


def _multi_tensor_adamax(params, grads, exp_avgs, exp_infs, steps, *, eps, beta1, beta2, lr, weight_decay, maximize):
    if not params:
        return
    for g_params, g_grads, g_avgs, g_infs, g_steps in group_by_device_and_dtype(
        params, grads, exp_avgs, exp_infs, steps
    ):
        g_grads = prepared_grads(g_params, g_grads, g_steps, weight_decay, maximize)
        for m, g in zip(g_avgs, g_grads, strict=True):
            m.lerp_(g, 1 - beta1)
        for u in g_infs:
            u.mul_(beta2)
        bounds = [g.abs().add_(eps) for g in g_grads]
        for u, b in zip(g_infs, bounds, strict=True):
            u.copy_(maximum_function(u, b))
        sizes = [(lr / (1 - beta1 ** s.item())) * -1 for s in g_steps]
        for p, m, u, size in zip(g_params, g_avgs, g_infs, sizes, strict=True):
            p.addcdiv_(m, u, value=size)


def adamax(
    params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_infs: list[Tensor],
    state_steps: list[Tensor], foreach: bool | None = None, maximize: bool = False, differentiable: bool = False,
    capturable: bool = False, has_complex: bool = False, *, eps: float, beta1: float, beta2: float, lr: float,
    weight_decay: float,
) -> None:  # fmt: skip
    """The Adamax update on lists of tensors, as ``torch.optim.adamax.adamax``."""
    run = functional_path(
        "adamax", params, foreach, _single_tensor_adamax, _multi_tensor_adamax, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable,
    )  # fmt: skip
    run(
        params, grads, exp_avgs, exp_infs, state_steps, eps=eps, beta1=beta1, beta2=beta2, lr=float(lr),
        weight_decay=weight_decay, maximize=maximize,
    )  # fmt: skip
