"""``Rprop``: resilient backpropagation. Each element keeps its own step size, grown by ``etas[1]``
while the gradient's sign holds and shrunk by ``etas[0]`` when it flips (that step is then skipped);
only the gradient's sign moves the parameter."""

from __future__ import annotations

from typing import Any

from ember.core import dtypes as D
from ember.core.aten.factories.factories import full_like, zeros_function, zeros_like
from ember.core.aten.pointwise.ternary import where_function
from ember.core.tensor import Tensor
from ember.optim._foreach import functional_path, group_by_device_and_dtype
from ember.optim.optimizer import Optimizer, check_tensor_lr, refuse_unsupported, require_nonnegative, step_without_grad

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        require_nonnegative(("learning rate", lr))
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        refuse_unsupported("Rprop", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable,
        )  # fmt: skip
        super().__init__(params, defaults)

    @step_without_grad
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params, grads, prevs, step_sizes, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("Rprop does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = zeros_function((), dtype=D.float32)
                    state["prev"] = zeros_like(p)
                    state["step_size"] = full_like(p.grad, float(group["lr"]))
                params.append(p)
                grads.append(p.grad)
                prevs.append(state["prev"])
                step_sizes.append(state["step_size"])
                steps.append(state["step"])
            etaminus, etaplus = group["etas"]
            size_min, size_max = group["step_sizes"]
            run = _multi_tensor_rprop if self._use_foreach(group) else _single_tensor_rprop
            run(
                params, grads, prevs, step_sizes, steps, step_size_min=size_min, step_size_max=size_max,
                etaminus=etaminus, etaplus=etaplus, maximize=group["maximize"],
            )  # fmt: skip
        return loss


def _factors(sign, etaminus: float, etaplus: float):
    """The sign of ``grad * prev`` mapped to the step-size factor: +1 to etaplus, -1 to etaminus, 0 to 1."""
    sign = where_function(sign.gt(0), etaplus, sign)
    sign = where_function(sign.lt(0), etaminus, sign)
    return where_function(sign.eq(0), 1, sign)


def _single_tensor_rprop(
    params, grads, prevs, step_sizes, steps, *, step_size_min, step_size_max, etaminus, etaplus, maximize
) -> None:
    for param, grad, prev, step_size, step in zip(params, grads, prevs, step_sizes, steps, strict=True):
        grad = -grad if maximize else grad
        step += 1
        factor = _factors(grad.mul(prev).sign(), etaminus, etaplus)
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        # A flipped sign skips this step, and the next step sees no previous gradient.
        grad = where_function(factor.eq(etaminus), 0, grad)
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)


def _multi_tensor_rprop(
    params, grads, prevs, step_sizes, steps, *, step_size_min, step_size_max, etaminus, etaplus, maximize
) -> None:
    if not params:
        return
    for g_params, g_grads, g_prevs, g_sizes, g_steps in group_by_device_and_dtype(
        params, grads, prevs, step_sizes, steps
    ):
        for s in g_steps:
            s.add_(1)
        signs = [g.mul(p) for g, p in zip(g_grads, g_prevs, strict=True)]
        if maximize:
            for s in signs:
                s.neg_()
        for p, g in zip(g_prevs, g_grads, strict=True):
            p.copy_(g)
            if maximize:
                p.neg_()
        factors = [_factors(s.sign(), etaminus, etaplus) for s in signs]
        for size, f in zip(g_sizes, factors, strict=True):
            size.mul_(f)
            size.clamp_(step_size_min, step_size_max)
        for p, f in zip(g_prevs, factors, strict=True):
            p.copy_(where_function(f.eq(etaminus), 0, p))
        for param, p, size in zip(g_params, g_prevs, g_sizes, strict=True):
            param.addcmul_(p.sign(), size, value=-1)


def rprop(
    params: list[Tensor], grads: list[Tensor], prevs: list[Tensor], step_sizes: list[Tensor],
    state_steps: list[Tensor], foreach: bool | None = None, capturable: bool = False, maximize: bool = False,
    differentiable: bool = False, has_complex: bool = False, *, step_size_min: float, step_size_max: float,
    etaminus: float, etaplus: float,
) -> None:  # fmt: skip
    """The Rprop update on lists of tensors, as ``torch.optim.rprop.rprop``."""
    run = functional_path(
        "rprop", params, foreach, _single_tensor_rprop, _multi_tensor_rprop, state_steps=state_steps,
        differentiable=differentiable, capturable=capturable,
    )  # fmt: skip
    run(
        params, grads, prevs, step_sizes, state_steps, step_size_min=step_size_min, step_size_max=step_size_max,
        etaminus=etaminus, etaplus=etaplus, maximize=maximize,
    )  # fmt: skip
