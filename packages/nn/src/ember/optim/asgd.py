"""``ASGD``: averaged stochastic gradient descent. ``eta`` (the step size) decays with the step count,
and from step ``t0`` on, ``ax`` keeps the running average of the parameters. ``eta`` and ``mu`` are
float32 0-d tensors in the state, as in PyTorch's checkpoints."""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import ones_function, zeros_function, zeros_like
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        require_nonnegative(("learning rate", lr), ("weight_decay value", weight_decay))
        refuse_unsupported("ASGD", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable,
        )  # fmt: skip
        super().__init__(params, defaults)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params, grads, mus, axs, etas, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("ASGD does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    state["eta"] = _scalar_tensor(float(group["lr"]))
                    state["mu"] = ones_function((), dtype=D.float32)
                    state["ax"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                mus.append(state["mu"])
                axs.append(state["ax"])
                etas.append(state["eta"])
                steps.append(state["step"])
            run = _multi_tensor_asgd if self._use_foreach(group) else _single_tensor_asgd
            run(
                params, grads, axs, mus, etas, steps, lambd=group["lambd"], lr=float(group["lr"]), t0=group["t0"],
                alpha=group["alpha"], weight_decay=group["weight_decay"], maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _scalar_tensor(value: float):
    """A float32 0-d tensor holding ``value`` rounded to float32."""
    return zeros_function((), dtype=D.float32).fill_(value)


def _single_tensor_asgd(params, grads, axs, mus, etas, steps, *, lambd, lr, t0, alpha, weight_decay, maximize):
    for param, grad, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, steps, strict=True):
        grad = -grad if maximize else grad
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        eta_value = eta.item()
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        step = step_t.item()
        eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
        mu.fill_(1 / max(1, step - t0))


def _multi_tensor_asgd(params, grads, axs, mus, etas, steps, *, lambd, lr, t0, alpha, weight_decay, maximize):
    if not params:
        return
    for g_params, g_grads, g_axs, g_mus, g_etas, g_steps in group_by_device_and_dtype(
        params, grads, axs, mus, etas, steps
    ):
        g_grads = prepared_grads(g_params, g_grads, g_steps, weight_decay, maximize)
        # The decay and the gradient step in one: param -= eta * (grad + lambd * param).
        fresh = maximize or weight_decay != 0
        if fresh:
            for g, p in zip(g_grads, g_params, strict=True):
                g.add_(p, alpha=lambd)
            updates = g_grads
        else:
            updates = [g.add(p, alpha=lambd) for g, p in zip(g_grads, g_params, strict=True)]
        for p, u, e in zip(g_params, updates, g_etas, strict=True):
            p.addcmul_(u, e, value=-1)
        for ax, p, m in zip(g_axs, g_params, g_mus, strict=True):
            ax.addcmul_(p.sub(ax), m)
        # The new eta is computed from the float32 step count in float32 arithmetic, as PyTorch's
        # multi-tensor path does (its loop path computes it in double).
        new_etas = [lr / ((1 + lambd * lr * s) ** alpha) for s in g_steps]
        for e, new in zip(g_etas, new_etas, strict=True):
            e.copy_(new)
        for m, s in zip(g_mus, g_steps, strict=True):
            m.fill_(1 / max(1, s.item() - t0))


def asgd(
    params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor], etas: list[Tensor],
    state_steps: list[Tensor], foreach: bool | None = None, maximize: bool = False, differentiable: bool = False,
    capturable: bool = False, has_complex: bool = False, *, lambd: float, lr: float, t0: float, alpha: float,
    weight_decay: float,
) -> None:  # fmt: skip
    """The ASGD update on lists of tensors, as ``torch.optim.asgd.asgd``."""
    run = functional_path(
        "asgd", params, foreach, _single_tensor_asgd, _multi_tensor_asgd, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable,
    )  # fmt: skip
    run(
        params, grads, axs, mus, etas, state_steps, lambd=lambd, lr=float(lr), t0=t0, alpha=alpha,
        weight_decay=weight_decay, maximize=maximize,
    )  # fmt: skip
