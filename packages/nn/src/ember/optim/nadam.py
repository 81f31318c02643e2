"""``NAdam``: Adam with Nesterov momentum, whose momentum coefficient warms up by ``momentum_decay``.

``mu_product`` (the running product of the momentum coefficients) is a float32 0-d tensor in the state,
as in PyTorch's checkpoints; the step sizes are computed in Python floats from it.
"""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import ones_function, zeros_function, zeros_like
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.adamax import check_betas
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
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
        require_nonnegative(("weight_decay value", weight_decay), ("momentum_decay value", momentum_decay))
        refuse_unsupported("NAdam", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
            capturable=capturable, differentiable=differentiable,
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
            params, grads, exp_avgs, exp_avg_sqs, mu_products, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("NAdam does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    state["mu_product"] = ones_function((), dtype=D.float32)
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
                mu_products.append(state["mu_product"])
                steps.append(state["step"])
            beta1, beta2 = group["betas"]
            run = _multi_tensor_nadam if self._use_foreach(group) else _single_tensor_nadam
            run(
                params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, beta1=beta1, beta2=beta2,
                lr=float(group["lr"]), weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
                eps=group["eps"], decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _momentum(beta1: float, step: float, momentum_decay: float) -> float:
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


def _single_tensor_nadam(
    params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, *, beta1, beta2, lr, weight_decay, momentum_decay, eps,
    decoupled_weight_decay, maximize,
) -> None:  # fmt: skip
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, mu_product, step_t = exp_avgs[i], exp_avg_sqs[i], mu_products[i], steps[i]
        step_t += 1
        step = step_t.item()
        bias_correction2 = 1 - beta2**step
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        mu = _momentum(beta1, step, momentum_decay)
        mu_next = _momentum(beta1, step + 1, momentum_decay)
        mu_product *= mu
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt()
        product = mu_product.item()
        denom.add_(eps)
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - product))
        param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - product * mu_next))


def _multi_tensor_nadam(
    params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, *, beta1, beta2, lr, weight_decay, momentum_decay, eps,
    decoupled_weight_decay, maximize,
) -> None:  # fmt: skip
    if not params:
        return
    lists = (params, grads, exp_avgs, exp_avg_sqs, mu_products, steps)
    for g_params, g_grads, g_avgs, g_sqs, g_products, g_steps in group_by_device_and_dtype(*lists):
        coupled = 0 if decoupled_weight_decay else weight_decay
        g_grads = prepared_grads(g_params, g_grads, g_steps, coupled, maximize)
        if decoupled_weight_decay and weight_decay != 0:
            for p in g_params:
                p.mul_(1 - lr * weight_decay)
        for m, g in zip(g_avgs, g_grads, strict=True):
            m.lerp_(g, 1 - beta1)
        for v in g_sqs:
            v.mul_(beta2)
        for v, g in zip(g_sqs, g_grads, strict=True):
            v.addcmul_(g, g, value=1 - beta2)
        roots = [v.sqrt() for v in g_sqs]
        step_values = [s.item() for s in g_steps]
        corrections = [(1 - beta2**n) ** 0.5 for n in step_values]
        mus = [_momentum(beta1, n, momentum_decay) for n in step_values]
        mu_nexts = [_momentum(beta1, n + 1, momentum_decay) for n in step_values]
        for product, mu in zip(g_products, mus, strict=True):
            product.mul_(mu)
        for r, c in zip(roots, corrections, strict=True):
            r.div_(c)
        for r in roots:
            r.add_(eps)
        products = [t.item() for t in g_products]
        grad_sizes = [(lr * (1.0 - mu) / (1.0 - pr)) * -1 for pr, mu in zip(products, mus, strict=True)]
        avg_sizes = [(lr * mn / (1.0 - pr * mn)) * -1 for pr, mn in zip(products, mu_nexts, strict=True)]
        for p, g, r, size in zip(g_params, g_grads, roots, grad_sizes, strict=True):
            p.addcdiv_(g, r, value=size)
        for p, m, r, size in zip(g_params, g_avgs, roots, avg_sizes, strict=True):
            p.addcdiv_(m, r, value=size)


def nadam(
    params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
    mu_products: list[Tensor], state_steps: list[Tensor], decoupled_weight_decay: bool = False,
    foreach: bool | None = None, capturable: bool = False, differentiable: bool = False, has_complex: bool = False,
    maximize: bool = False, *, beta1: float, beta2: float, lr: float, weight_decay: float, momentum_decay: float,
    eps: float,
) -> None:  # fmt: skip
    """The NAdam update on lists of tensors, as ``torch.optim.nadam.nadam``."""
    if not all(isinstance(t, Tensor) for t in mu_products):
        raise RuntimeError("API has changed, `mu_products` argument must contain a list of singleton tensors")
    run = functional_path(
        "nadam", params, foreach, _single_tensor_nadam, _multi_tensor_nadam, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable,
    )  # fmt: skip
    run(
        params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, beta1=beta1, beta2=beta2, lr=float(lr),
        weight_decay=weight_decay, momentum_decay=momentum_decay, eps=eps,
        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
    )  # fmt: skip
