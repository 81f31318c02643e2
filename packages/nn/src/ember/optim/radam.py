"""``RAdam``: Adam whose adaptive step is switched on, and rectified, once the variance estimate is
tractable (``rho_t > 5``); before that, the step is plain bias-corrected momentum."""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.adamax import check_betas
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        require_nonnegative(("learning rate", lr), ("epsilon value", eps))
        check_betas(betas)
        require_nonnegative(("weight_decay value", weight_decay))
        refuse_unsupported("RAdam", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
            capturable=capturable, decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable,
        )  # fmt: skip
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("RAdam does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
                steps.append(state["step"])
            beta1, beta2 = group["betas"]
            run = _multi_tensor_radam if self._use_foreach(group) else _single_tensor_radam
            run(
                params, grads, exp_avgs, exp_avg_sqs, steps, beta1=beta1, beta2=beta2, lr=float(group["lr"]),
                weight_decay=group["weight_decay"], eps=group["eps"],
                decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _rho_t(rho_inf: float, beta2: float, step: float) -> float:
    return rho_inf - 2 * step * (beta2**step) / (1 - beta2**step)


def _rect(rho_t: float, rho_inf: float) -> float:
    return ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5


def _single_tensor_radam(
    params, grads, exp_avgs, exp_avg_sqs, steps, *, beta1, beta2, lr, weight_decay, eps, decoupled_weight_decay,
    maximize,
) -> None:  # fmt: skip
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], steps[i]
        step_t += 1
        step = step_t.item()
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        corrected_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = _rho_t(rho_inf, beta2, step)
        if rho_t > 5.0:
            adaptive = (bias_correction2**0.5) / exp_avg_sq.sqrt().add_(eps)
            param.add_(corrected_avg * lr * adaptive * _rect(rho_t, rho_inf), alpha=-1.0)
        else:
            param.add_(corrected_avg * lr, alpha=-1.0)


def _multi_tensor_radam(
    params, grads, exp_avgs, exp_avg_sqs, steps, *, beta1, beta2, lr, weight_decay, eps, decoupled_weight_decay,
    maximize,
) -> None:  # fmt: skip
    if not params:
        return
    for g_params, g_grads, g_avgs, g_sqs, g_steps in group_by_device_and_dtype(
        params, grads, exp_avgs, exp_avg_sqs, steps
    ):
        coupled = 0 if decoupled_weight_decay else weight_decay
        g_grads = prepared_grads(g_params, g_grads, g_steps, coupled, maximize)
        if decoupled_weight_decay and weight_decay != 0:
            for p in g_params:
                p.mul_(1 - lr * weight_decay)
        rho_inf = 2 / (1 - beta2) - 1
        step_values = [s.item() for s in g_steps]
        rects = []
        for n in step_values:
            rho_t = _rho_t(rho_inf, beta2, n)
            rects.append(_rect(rho_t, rho_inf) if rho_t > 5 else 0)
        for m, g in zip(g_avgs, g_grads, strict=True):
            m.lerp_(g, 1 - beta1)
        for v in g_sqs:
            v.mul_(beta2)
        for v, g in zip(g_sqs, g_grads, strict=True):
            v.addcmul_(g, g, value=1 - beta2)
        corrections1 = [1 - beta1**n for n in step_values]
        # The unrectified step applies only while the rectifier is off; both are folded into one factor.
        unrect_sizes = [(lr * (0 if r > 0 else 1.0) / bc) * -1 for r, bc in zip(rects, corrections1, strict=True)]
        scales = [
            ((1 - beta2**n) ** 0.5) * (lr * r / bc) * -1
            for n, r, bc in zip(step_values, rects, corrections1, strict=True)
        ]
        buffers = [v.sqrt() for v in g_sqs]
        for b in buffers:
            b.add_(eps)
        for b, s in zip(buffers, scales, strict=True):
            b.div_(s)
        for b in buffers:
            b.reciprocal_()
        for b, u in zip(buffers, unrect_sizes, strict=True):
            b.add_(u)
        for p, m, b in zip(g_params, g_avgs, buffers, strict=True):
            p.addcmul_(m, b)


def radam(
    params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
    state_steps: list[Tensor], decoupled_weight_decay: bool = False, foreach: bool | None = None,
    differentiable: bool = False, capturable: bool = False, has_complex: bool = False, maximize: bool = False, *,
    beta1: float, beta2: float, lr: float, weight_decay: float, eps: float,
) -> None:  # fmt: skip
    """The RAdam update on lists of tensors, as ``torch.optim.radam.radam``."""
    run = functional_path(
        "radam", params, foreach, _single_tensor_radam, _multi_tensor_radam, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable,
    )  # fmt: skip
    run(
        params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1, beta2=beta2, lr=float(lr),
        weight_decay=weight_decay, eps=eps, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
    )  # fmt: skip
