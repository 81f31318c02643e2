"""``SGD``: plain, with momentum (dampening, Nesterov), L2 weight decay and ``maximize``."""

from __future__ import annotations

from typing import Any

from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype, prepared_grads
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, step_without_grad

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_tensor_lr(lr)
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        refuse_unsupported("SGD", fused=fused, differentiable=differentiable)
        defaults = dict(
            lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
            maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused,
        )  # fmt: skip
        super().__init__(params, defaults)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad for p in params]
            momentum = group["momentum"]
            bufs = [self.state[p].get("momentum_buffer") for p in params] if momentum != 0 else [None] * len(params)
            run = _multi_tensor_sgd if self._use_foreach(group) else _single_tensor_sgd
            run(
                params, grads, bufs, weight_decay=group["weight_decay"], momentum=momentum, lr=float(group["lr"]),
                dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"],
            )  # fmt: skip
            if momentum != 0:
                for p, buf in zip(params, bufs, strict=True):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def _single_tensor_sgd(
    params: list[Tensor], grads: list[Tensor], bufs: list[Tensor | None], *, weight_decay: float, momentum: float,
    lr: float, dampening: float, nesterov: bool, maximize: bool,
) -> None:  # fmt: skip
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = bufs[i]
            if buf is None:
                buf = grad.detach().clone()
                bufs[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)


def _multi_tensor_sgd(
    params: list[Tensor], grads: list[Tensor], bufs: list[Tensor | None], *, weight_decay: float, momentum: float,
    lr: float, dampening: float, nesterov: bool, maximize: bool,
) -> None:  # fmt: skip
    if not params:
        return
    indices = list(range(len(params)))
    for group_params, group_grads, group_idx in group_by_device_and_dtype(params, grads, indices):
        group_grads = prepared_grads(group_params, group_grads, [], weight_decay, maximize)
        if momentum != 0:
            group_bufs = [bufs[i] for i in group_idx]
            if all(b is not None for b in group_bufs):
                for b in group_bufs:
                    b.mul_(momentum)
                for b, g in zip(group_bufs, group_grads, strict=True):
                    b.add_(g, alpha=1 - dampening)
            else:
                for k, i in enumerate(group_idx):
                    if bufs[i] is None:
                        bufs[i] = group_grads[k].detach().clone()
                    else:
                        bufs[i].mul_(momentum).add_(group_grads[k], alpha=1 - dampening)
                    group_bufs[k] = bufs[i]
            if nesterov:
                # In place even when these are the callers' .grad tensors, as PyTorch's multi-tensor SGD does.
                for g, b in zip(group_grads, group_bufs, strict=True):
                    g.add_(b, alpha=momentum)
            else:
                group_grads = group_bufs
        for p, g in zip(group_params, group_grads, strict=True):
            p.add_(g, alpha=-lr)


def sgd(
    params: list[Tensor], d_p_list: list[Tensor], momentum_buffer_list: list[Tensor | None],
    has_sparse_grad: bool = False, foreach: bool | None = None, fused: bool | None = None,
    grad_scale: Tensor | None = None, found_inf: Tensor | None = None, *, weight_decay: float, momentum: float,
    lr: float, dampening: float, nesterov: bool, maximize: bool,
) -> None:  # fmt: skip
    """The SGD update on lists of tensors, as ``torch.optim.sgd.sgd``; new momentum buffers are written
    into ``momentum_buffer_list``."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("sgd: grad_scale/found_inf (fused gradient scaling) are not supported")
    run = functional_path("sgd", params, foreach, _single_tensor_sgd, _multi_tensor_sgd, fused=fused)
    run(
        params, d_p_list, momentum_buffer_list, weight_decay=weight_decay, momentum=momentum, lr=float(lr),
        dampening=dampening, nesterov=nesterov, maximize=maximize,
    )  # fmt: skip
