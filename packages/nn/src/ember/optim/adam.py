"""``Adam`` and ``AdamW`` (Adam with decoupled weight decay), with ``amsgrad`` and ``maximize``.

The step count is a float32 0-d tensor in the state, as in PyTorch's checkpoints; the bias
corrections are computed in Python floats from it. The per-tensor and multi-tensor paths apply the
same formulas in PyTorch's order for each path.
"""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.aten.pointwise.binary import maximum_function
from ember.core.tensor import Tensor
from ember.optim._adam_numpy import numpy_adam_step, qualifies
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.optimizer import Optimizer, check_tensor_lr, is_compiling, refuse_unsupported, step_without_grad

__all__ = ["Adam", "AdamW", "adam", "adamw"]


def _scalar(value: Any) -> float:
    return float(value.item()) if isinstance(value, Tensor) else value


class Adam(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        if not _scalar(lr) >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps >= 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not weight_decay >= 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        refuse_unsupported(type(self).__name__, fused=fused, capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
            foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )  # fmt: skip
        super().__init__(params, defaults)

    def _init_group(self, group: dict[str, Any]) -> tuple[list[Tensor], ...]:
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = zeros_function((), dtype=D.float32)
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            steps.append(state["step"])
        return params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lists = self._init_group(group)
            run = _multi_tensor_adam if self._use_foreach(group) else _single_tensor_adam
            beta1, beta2 = group["betas"]
            run(
                *lists, amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=_scalar(group["lr"]),
                weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                decoupled_weight_decay=group["decoupled_weight_decay"],
            )  # fmt: skip
        return loss


class AdamW(Adam):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize, capturable=capturable,
            differentiable=differentiable, fused=fused, decoupled_weight_decay=True,
        )  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def _single_tensor_adam(
    params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, amsgrad, beta1, beta2, lr, weight_decay, eps,
    maximize, decoupled_weight_decay,
) -> None:  # fmt: skip
    # The NumPy update computes the same numbers as the ops below, without their dispatch. A compiled step
    # keeps the step count a tensor: the bias corrections become graph ops, and one graph serves every step.
    compiling = is_compiling()
    shortcut = not (compiling or amsgrad or maximize or (weight_decay != 0 and not decoupled_weight_decay))
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], steps[i]
        step_t += 1
        if shortcut and qualifies(param, grad, exp_avg, exp_avg_sq):
            numpy_adam_step(
                param, grad, exp_avg, exp_avg_sq, step=step_t.item(), beta1=beta1, beta2=beta2, lr=lr,
                weight_decay=weight_decay, eps=eps, decoupled_weight_decay=decoupled_weight_decay,
            )  # fmt: skip
            continue
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = step_t if compiling else step_t.item()
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        if amsgrad:
            max_exp_avg_sqs[i].copy_(maximum_function(max_exp_avg_sqs[i], exp_avg_sq))
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        if compiling:  # a tensor step size: addcdiv's value is a Python number
            param.add_(exp_avg * -step_size / denom)
        else:
            param.addcdiv_(exp_avg, denom, value=-step_size)


def _multi_tensor_adam(
    params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, amsgrad, beta1, beta2, lr, weight_decay, eps,
    maximize, decoupled_weight_decay,
) -> None:  # fmt: skip
    if not params:
        return
    lists = [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else [None] * len(params), steps]
    for g_params, g_grads, g_avgs, g_sqs, g_maxes, g_steps in group_by_device_and_dtype(*lists):
        g_grads = prepared_grads(g_params, g_grads, g_steps, 0 if decoupled_weight_decay else weight_decay, maximize)
        if decoupled_weight_decay and weight_decay != 0:
            for p in g_params:
                p.mul_(1 - lr * weight_decay)
        for m, g in zip(g_avgs, g_grads, strict=True):
            m.lerp_(g, 1 - beta1)
        for v in g_sqs:
            v.mul_(beta2)
        for v, g in zip(g_sqs, g_grads, strict=True):
            v.addcmul_(g, g, value=1 - beta2)
        compiling = is_compiling()  # step counts stay tensors in a compiled step (see the per-tensor path)
        step_values = g_steps if compiling else [s.item() for s in g_steps]
        step_sizes = [(lr / (1 - beta1**n)) * -1 for n in step_values]
        corrections = [(1 - beta2**n) ** 0.5 for n in step_values]
        if amsgrad:
            for mx, v in zip(g_maxes, g_sqs, strict=True):
                mx.copy_(maximum_function(mx, v))
            denoms = [mx.sqrt() for mx in g_maxes]
        else:
            denoms = [v.sqrt() for v in g_sqs]
        for d, c in zip(denoms, corrections, strict=True):
            d.div_(c)
        for d in denoms:
            d.add_(eps)
        for p, m, d, size in zip(g_params, g_avgs, denoms, step_sizes, strict=True):
            if compiling:
                p.add_(m * size / d)
            else:
                p.addcdiv_(m, d, value=size)


def adam(
    params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
    max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None, capturable: bool = False,
    differentiable: bool = False, fused: bool | None = None, grad_scale: Tensor | None = None,
    found_inf: Tensor | None = None, has_complex: bool = False, decoupled_weight_decay: bool = False, *,
    amsgrad: bool, beta1: float, beta2: float, lr: float, weight_decay: float, eps: float, maximize: bool,
) -> None:  # fmt: skip
    """The Adam update on lists of tensors, as ``torch.optim.adam.adam``."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("adam: grad_scale/found_inf (fused gradient scaling) are not supported")
    run = functional_path(
        "adam", params, foreach, _single_tensor_adam, _multi_tensor_adam, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable, fused=fused,
    )  # fmt: skip
    run(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad=amsgrad, beta1=beta1,
        beta2=beta2, lr=_scalar(lr), weight_decay=weight_decay, eps=eps, maximize=maximize,
        decoupled_weight_decay=decoupled_weight_decay,
    )  # fmt: skip


def adamw(
    params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
    max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None, capturable: bool = False,
    differentiable: bool = False, fused: bool | None = None, grad_scale: Tensor | None = None,
    found_inf: Tensor | None = None, has_complex: bool = False, *, amsgrad: bool, beta1: float, beta2: float,
    lr: float, weight_decay: float, eps: float, maximize: bool,
) -> None:  # fmt: skip
    """The AdamW update on lists of tensors, as ``torch.optim.adamw.adamw``: Adam with decoupled decay."""
    adam(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach, capturable, differentiable,
        fused, grad_scale, found_inf, has_complex, True, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr,
        weight_decay=weight_decay, eps=eps, maximize=maximize,
    )  # fmt: skip
