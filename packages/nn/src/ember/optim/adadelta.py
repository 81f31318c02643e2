"""``Adadelta``: steps scaled by the ratio of running root-mean-squares of past updates and of gradients."""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        require_nonnegative(("learning rate", lr))
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        require_nonnegative(("epsilon value", eps), ("weight_decay value", weight_decay))
        refuse_unsupported("Adadelta", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
            foreach=foreach, differentiable=differentiable,
        )  # fmt: skip
        super().__init__(params, defaults)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params, grads, square_avgs, acc_deltas, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("Adadelta does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    state["square_avg"] = zeros_like(p)
                    state["acc_delta"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                square_avgs.append(state["square_avg"])
                acc_deltas.append(state["acc_delta"])
                steps.append(state["step"])
            run = _multi_tensor_adadelta if self._use_foreach(group) else _single_tensor_adadelta
            run(
                params, grads, square_avgs, acc_deltas, steps, lr=float(group["lr"]), rho=group["rho"],
                eps=group["eps"], weight_decay=group["weight_decay"], maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, steps, *, lr, rho, eps, weight_decay, maximize):
    for param, grad, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas, steps, strict=True):
        step += 1
        grad = -grad if maximize else grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)


def _multi_tensor_adadelta(params, grads, square_avgs, acc_deltas, steps, *, lr, rho, eps, weight_decay, maximize):
    if not params:
        return
    for g_params, g_grads, g_sqs, g_accs, g_steps in group_by_device_and_dtype(
        params, grads, square_avgs, acc_deltas, steps
    ):
        g_grads = prepared_grads(g_params, g_grads, g_steps, weight_decay, maximize)
        for v in g_sqs:
            v.mul_(rho)
        for v, g in zip(g_sqs, g_grads, strict=True):
            v.addcmul_(g, g, value=1 - rho)
        stds = [v.add(eps) for v in g_sqs]
        for s in stds:
            s.sqrt_()
        deltas = [a.add(eps) for a in g_accs]
        for d in deltas:
            d.sqrt_()
        for d, s in zip(deltas, stds, strict=True):
            d.div_(s)
        for d, g in zip(deltas, g_grads, strict=True):
            d.mul_(g)
        for a in g_accs:
            a.mul_(rho)
        for a, d in zip(g_accs, deltas, strict=True):
            a.addcmul_(d, d, value=1 - rho)
        for p, d in zip(g_params, deltas, strict=True):
            p.add_(d, alpha=-lr)


def adadelta(
    params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], acc_deltas: list[Tensor],
    state_steps: list[Tensor], capturable: bool = False, foreach: bool | None = None, differentiable: bool = False,
    has_complex: bool = False, *, lr: float, rho: float, eps: float, weight_decay: float, maximize: bool,
) -> None:  # fmt: skip
    """The Adadelta update on lists of tensors, as ``torch.optim.adadelta.adadelta``."""
    run = functional_path(
        "adadelta", params, foreach, _single_tensor_adadelta, _multi_tensor_adadelta, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable,
    )  # fmt: skip
    run(
        params, grads, square_avgs, acc_deltas, state_steps, lr=float(lr), rho=rho, eps=eps,
        weight_decay=weight_decay, maximize=maximize,
    )  # fmt: skip
