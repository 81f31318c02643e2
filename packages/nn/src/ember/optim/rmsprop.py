"""``RMSprop``: divide by the root of a running mean of squared gradients (``centered`` subtracts
the squared running mean of the gradients), optionally with momentum."""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        require_nonnegative(
            ("learning rate", lr),
            ("epsilon value", eps),
            ("momentum value", momentum),
            ("weight_decay value", weight_decay),
            ("alpha value", alpha),
        )
        refuse_unsupported("RMSprop", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
            capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable,
        )  # fmt: skip
        super().__init__(params, defaults)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params, grads, square_avgs, grad_avgs, bufs, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("RMSprop does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    state["square_avg"] = zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                square_avgs.append(state["square_avg"])
                steps.append(state["step"])
                bufs.append(state.get("momentum_buffer"))
                grad_avgs.append(state.get("grad_avg"))
            run = _multi_tensor_rmsprop if self._use_foreach(group) else _single_tensor_rmsprop
            run(
                params, grads, square_avgs, grad_avgs, bufs, steps, lr=float(group["lr"]), alpha=group["alpha"],
                eps=group["eps"], weight_decay=group["weight_decay"], momentum=group["momentum"],
                centered=group["centered"], maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _single_tensor_rmsprop(
    params, grads, square_avgs, grad_avgs, bufs, steps, *, lr, alpha, eps, weight_decay, momentum, centered, maximize
) -> None:
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        square_avg = square_avgs[i]
        steps[i] += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avgs[i].lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avgs[i], grad_avgs[i], value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            bufs[i].mul_(momentum).addcdiv_(grad, avg)
            param.add_(bufs[i], alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)


def _multi_tensor_rmsprop(
    params, grads, square_avgs, grad_avgs, bufs, steps, *, lr, alpha, eps, weight_decay, momentum, centered, maximize
) -> None:
    if not params:
        return
    lists = (params, grads, square_avgs, grad_avgs, bufs, steps)
    for g_params, g_grads, g_sqs, g_avgs, g_bufs, g_steps in group_by_device_and_dtype(*lists):
        g_grads = prepared_grads(g_params, g_grads, g_steps, weight_decay, maximize)
        for v in g_sqs:
            v.mul_(alpha)
        for v, g in zip(g_sqs, g_grads, strict=True):
            v.addcmul_(g, g, value=1 - alpha)
        if centered:
            for m, g in zip(g_avgs, g_grads, strict=True):
                m.lerp_(g, 1 - alpha)
            avgs = [v.addcmul(m, m, value=-1) for v, m in zip(g_sqs, g_avgs, strict=True)]
            for a in avgs:
                a.sqrt_()
        else:
            avgs = [v.sqrt() for v in g_sqs]
        for a in avgs:
            a.add_(eps)
        if momentum > 0:
            for b in g_bufs:
                b.mul_(momentum)
            for b, g, a in zip(g_bufs, g_grads, avgs, strict=True):
                b.addcdiv_(g, a)
            for p, b in zip(g_params, g_bufs, strict=True):
                p.add_(b, alpha=-lr)
        else:
            for p, g, a in zip(g_params, g_grads, avgs, strict=True):
                p.addcdiv_(g, a, value=-lr)


def rmsprop(
    params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], grad_avgs: list[Tensor],
    momentum_buffer_list: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
    maximize: bool = False, differentiable: bool = False, capturable: bool = False, has_complex: bool = False, *,
    lr: float, alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool,
) -> None:  # fmt: skip
    """The RMSprop update on lists of tensors, as ``torch.optim.rmsprop.rmsprop``."""
    run = functional_path(
        "rmsprop", params, foreach, _single_tensor_rmsprop, _multi_tensor_rmsprop, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable,
    )  # fmt: skip
    run(
        params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, lr=float(lr), alpha=alpha, eps=eps,
        weight_decay=weight_decay, momentum=momentum, centered=centered, maximize=maximize,
    )  # fmt: skip
