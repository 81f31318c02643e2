"""``Adafactor``: Adam-like steps whose second moment, for a matrix, is factored into row and column
means (memory ``O(rows + cols)`` instead of ``O(rows * cols)``). Its decay ``1 - step**beta2_decay``
and relative step size ``min(lr, 1/sqrt(step))`` follow the step count; each update is clipped to
an RMS of at most ``d`` and scaled by the parameter's RMS (at least ``eps[1]``)."""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function, zeros_like
from ember.core.dtype_info import finfo
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path
from ember.optim.optimizer import Optimizer, check_tensor_lr, step_without_grad

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not beta2_decay <= 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not eps[0] >= 0.0:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not eps[1] >= 0.0:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not d >= 1.0:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(
            lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
            maximize=maximize,
        )  # fmt: skip
        super().__init__(params, defaults)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params, grads, row_vars, col_vars, variances, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("Adafactor does not support sparse gradients")
                if p.dtype.category == D.COMPLEX:
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    if p.grad.dim() > 1:
                        row_shape, col_shape = list(p.grad.shape), list(p.grad.shape)
                        row_shape[-1] = 1
                        col_shape[-2] = 1
                        state["row_var"] = p.grad.new_zeros(row_shape)
                        state["col_var"] = p.grad.new_zeros(col_shape)
                    else:
                        state["variance"] = zeros_like(p.grad)
                params.append(p)
                grads.append(p.grad)
                row_vars.append(state.get("row_var"))
                col_vars.append(state.get("col_var"))
                variances.append(state.get("variance"))
                steps.append(state["step"])
            eps1, eps2 = group["eps"]
            run = _multi_tensor_adafactor if self._use_foreach(group) else _single_tensor_adafactor
            run(
                params, grads, row_vars, col_vars, variances, steps, d=group["d"], lr=float(group["lr"]),
                beta2_decay=group["beta2_decay"], weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _factored_estimate(grad, row_var, col_var, decay: float, eps1: float):
    """Update the row and column means of ``grad**2`` and return their rank-one estimate of it."""
    row_mean = grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1))
    row_var.lerp_(row_mean, decay)
    col_mean = grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2))
    col_var.lerp_(col_mean, decay)
    estimate = row_var @ col_var
    return estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))


def _schedule(step: float, lr: float, beta2_decay: float) -> tuple[float, float]:
    return step**beta2_decay, min(lr, 1 / (step**0.5))


def _single_tensor_adafactor(
    params, grads, row_vars, col_vars, variances, steps, *, d, lr, beta2_decay, weight_decay, eps1, eps2, maximize
) -> None:
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        if eps1 is None:
            eps1 = finfo(param.dtype).eps
        steps[i] += 1
        decay, rho_t = _schedule(steps[i].item(), lr, beta2_decay)
        alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            estimate = _factored_estimate(grad, row_vars[i], col_vars[i], decay, eps1)
        else:
            variances[i].lerp_(grad * grad, decay)
            estimate = variances[i].clone()
        update = estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
        param.add_(update, alpha=-alpha / denom)


def _multi_tensor_adafactor(
    params, grads, row_vars, col_vars, variances, steps, *, d, lr, beta2_decay, weight_decay, eps1, eps2, maximize
) -> None:
    if not params:
        return
    # PyTorch groups by (device, dtype, whether the gradient is a matrix); the order of groups changes
    # no number, since every stage is per tensor.
    groups: dict[tuple, list[int]] = {}
    for i, (p, g) in enumerate(zip(params, grads, strict=True)):
        groups.setdefault((str(p.device), p.dtype, g.dim() > 1), []).append(i)
    for (_, dtype, is_matrix), indices in groups.items():
        g_params = [params[i] for i in indices]
        g_grads = [grads[i] for i in indices]
        g_steps = [steps[i] for i in indices]
        if eps1 is None:
            eps1 = finfo(dtype).eps
        if maximize:
            g_grads = [-g for g in g_grads]
        for s in g_steps:
            s.add_(1)
        schedules = [_schedule(s.item(), lr, beta2_decay) for s in g_steps]
        alphas = [
            max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
            for p, (_, rho) in zip(g_params, schedules, strict=True)
        ]
        if weight_decay != 0:
            for p in g_params:
                p.mul_(1 - lr * weight_decay)
        if is_matrix:
            estimates = []
            for i, g, (decay, _) in zip(indices, g_grads, schedules, strict=True):
                row_mean = g.norm(dim=-1, keepdim=True)
                row_mean.mul_(row_mean).div_(g.size(-1))
                row_vars[i].lerp_(row_mean, decay)
            for i, g, (decay, _) in zip(indices, g_grads, schedules, strict=True):
                col_mean = g.norm(dim=-2, keepdim=True)
                col_mean.mul_(col_mean).div_(g.size(-2))
                col_vars[i].lerp_(col_mean, decay)
            for i in indices:
                means = row_vars[i].mean(dim=-2, keepdim=True).clamp_(min=eps1)
                estimates.append((row_vars[i] @ col_vars[i]).div_(means))
        else:
            for i, g, (decay, _) in zip(indices, g_grads, schedules, strict=True):
                variances[i].lerp_(g * g, decay)
            estimates = [variances[i].clone() for i in indices]
        updates = [e.clamp_(min=eps1 * eps1).rsqrt_() for e in estimates]
        for u, g in zip(updates, g_grads, strict=True):
            u.mul_(g)
        scales = [
            -a / max(1.0, u.norm(2).item() / ((u.numel() ** 0.5) * d)) for a, u in zip(alphas, updates, strict=True)
        ]
        for p, u, scale in zip(g_params, updates, scales, strict=True):
            p.add_(u.mul_(scale))


def adafactor(
    params: list[Tensor], grads: list[Tensor], row_vars: list[Tensor | None], col_vars: list[Tensor | None],
    variances: list[Tensor | None], state_steps: list[Tensor], foreach: bool | None = None,
    grad_scale: Tensor | None = None, found_inf: Tensor | None = None, has_complex: bool = False, *, d: float,
    lr: float, beta2_decay: float, weight_decay: float, eps1: float, eps2: float, maximize: bool,
) -> None:  # fmt: skip
    """The Adafactor update on lists of tensors, as ``torch.optim._adafactor.adafactor``."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("`state_steps` argument must contain a list of singleton tensors")
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Grad scaling should occur outside of optimizer.step()")
    run = functional_path("adafactor", params, foreach, _single_tensor_adafactor, _multi_tensor_adafactor)
    run(
        params, grads, row_vars, col_vars, variances, state_steps, d=d, lr=float(lr), beta2_decay=beta2_decay,
        weight_decay=weight_decay, eps1=eps1, eps2=eps2, maximize=maximize,
    )  # fmt: skip
