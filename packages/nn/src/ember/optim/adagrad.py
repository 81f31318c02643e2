"""``Adagrad``: per-element step sizes from the running sum of squared gradients, with ``lr_decay``.

The accumulators exist from construction (``initial_accumulator_value``), as in PyTorch. A sparse
gradient (``Embedding(sparse=True)``) updates only the rows it names, on the per-parameter path.
"""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import full_like, zeros_function
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_tensor_lr(lr)
        require_nonnegative(
            ("learning rate", lr),
            ("lr_decay value", lr_decay),
            ("weight_decay value", weight_decay),
            ("initial_accumulator_value value", initial_accumulator_value),
            ("epsilon value", eps),
        )
        refuse_unsupported("Adagrad", fused=fused, differentiable=differentiable)
        defaults = dict(
            lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
            differentiable=differentiable, fused=fused,
        )  # fmt: skip
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = zeros_function((), dtype=D.float32)
                state["sum"] = full_like(p, initial_accumulator_value)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad for p in params]
            sums = [self.state[p]["sum"] for p in params]
            steps = [self.state[p]["step"] for p in params]
            sparse = any(g.is_sparse for g in grads)  # sparse gradients take the per-parameter path
            run = _multi_tensor_adagrad if self._use_foreach(group) and not sparse else _single_tensor_adagrad
            run(
                params, grads, sums, steps, lr=float(group["lr"]), weight_decay=group["weight_decay"],
                lr_decay=group["lr_decay"], eps=group["eps"], maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _single_tensor_adagrad(params, grads, sums, steps, *, lr, weight_decay, lr_decay, eps, maximize) -> None:
    for param, grad, state_sum, step_t in zip(params, grads, sums, steps, strict=True):
        step_t += 1
        step = step_t.item()
        grad = -grad if maximize else grad
        if weight_decay != 0:
            if grad.is_sparse:
                raise RuntimeError("weight_decay option is not compatible with sparse gradients")
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        if grad.is_sparse:
            _sparse_adagrad_update(param, grad, state_sum, clr, eps)
            continue
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)


def _sparse_adagrad_update(param: Tensor, grad: Tensor, state_sum: Tensor, clr: float, eps: float) -> None:
    """The rows a sparse gradient names, updated with PyTorch's arithmetic in PyTorch's order."""
    from ember.core.sparse.construct import _sparse_coo_tensor_unsafe

    grad = grad.coalesce()
    indices, values = grad._indices(), grad._values()
    size = tuple(grad.shape)
    state_sum.add_(_sparse_coo_tensor_unsafe(indices, values.pow(2), size))
    std_values = state_sum.sparse_mask(grad)._values().sqrt_().add_(eps)
    param.add_(_sparse_coo_tensor_unsafe(indices, values / std_values, size), alpha=-clr)


def _multi_tensor_adagrad(params, grads, sums, steps, *, lr, weight_decay, lr_decay, eps, maximize) -> None:
    if not params:
        return
    for g_params, g_grads, g_sums, g_steps in group_by_device_and_dtype(params, grads, sums, steps):
        g_grads = prepared_grads(g_params, g_grads, g_steps, weight_decay, maximize)
        minus_clr = [-lr / (1 + (s.item() - 1) * lr_decay) for s in g_steps]
        for acc, g in zip(g_sums, g_grads, strict=True):
            acc.addcmul_(g, g, value=1)
        stds = [acc.sqrt() for acc in g_sums]
        for s in stds:
            s.add_(eps)
        if weight_decay != 0 or maximize:  # the grads are our own copies: scale them in place
            for g, c in zip(g_grads, minus_clr, strict=True):
                g.mul_(c)
            numerators = g_grads
        else:
            numerators = [g.mul(c) for g, c in zip(g_grads, minus_clr, strict=True)]
        for p, n, s in zip(g_params, numerators, stds, strict=True):
            p.addcdiv_(n, s)


def adagrad(
    params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor], state_steps: list[Tensor],
    fused: bool | None = None, grad_scale: Tensor | None = None, found_inf: Tensor | None = None,
    has_sparse_grad: bool = False, foreach: bool | None = None, differentiable: bool = False,
    has_complex: bool = False, *, lr: float, weight_decay: float, lr_decay: float, eps: float, maximize: bool,
) -> None:  # fmt: skip
    """The Adagrad update on lists of tensors, as ``torch.optim.adagrad.adagrad``."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("adagrad: grad_scale/found_inf (fused gradient scaling) are not supported")
    run = functional_path(
        "adagrad", params, foreach, _single_tensor_adagrad, _multi_tensor_adagrad, state_steps=state_steps,
        differentiable=differentiable, fused=fused,
    )  # fmt: skip
    run(
        params, grads, state_sums, state_steps, lr=float(lr), weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
        maximize=maximize,
    )  # fmt: skip
