"""Stochastic weight averaging and exponential moving averages of a model, as ``torch.optim.swa_utils``.

``AveragedModel`` holds a deep copy of a model whose parameters (and, with ``use_buffers``, buffers)
are a running average of the model's; ``n_averaged`` counts the averages taken, as an int64 buffer,
so that it is saved in the averaged model's state dict as PyTorch's is. ``SWALR`` anneals each
group's rate to a constant ``swa_lr``; ``update_bn`` recomputes batch-norm statistics for the
averaged weights with one pass over the data.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from ember.autograd import no_grad
from ember.core import dtypes as D
from ember.core.aten.factories.factories import zeros_function
from ember.core.tensor import Tensor
from ember.nn.modules.batchnorm import _BatchNorm
from ember.nn.modules.module import Module
from ember.optim._lr_cycles import _per_group
from ember.optim.lr_scheduler import LRScheduler
from ember.optim.optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _is_inexact(t: Tensor) -> bool:
    return t.dtype.category in (D.FLOATING, D.COMPLEX)


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place update of lists of averages: ``ema += (1 - decay) * (param - ema)``."""
    _check_decay(decay)

    def ema_update(ema_param_list: list[Tensor], current_param_list: list[Tensor], _: Any) -> None:
        with no_grad():
            if _is_inexact(ema_param_list[0]):
                for ema, current in zip(ema_param_list, current_param_list, strict=True):
                    ema.lerp_(current, 1 - decay)
            else:
                for ema, current in zip(ema_param_list, current_param_list, strict=True):
                    ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """An in-place update of lists of running means, given the number of averages taken so far."""

    def swa_update(averaged_param_list: list[Tensor], current_param_list: list[Tensor], num_averaged: Any) -> None:
        with no_grad():
            pairs = list(zip(averaged_param_list, current_param_list, strict=True))
            if _is_inexact(averaged_param_list[0]):
                weight = 1 / (num_averaged + 1)
                weight = weight.item() if isinstance(weight, Tensor) else weight
                for avg, current in pairs:
                    avg.lerp_(current, weight)
            else:
                diffs = [current.sub(avg) for avg, current in pairs]
                for (avg, _), diff in zip(pairs, diffs, strict=True):
                    if isinstance(num_averaged, Tensor):
                        avg.addcdiv_(diff, num_averaged + 1)
                    else:
                        avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``avg_fn`` for an exponential moving average: returns ``decay * ema + (1 - decay) * param``."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """``avg_fn`` for an equal-weight running mean of every model averaged so far."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose weights are the average of the models given to ``update_parameters``."""

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
        multi_avg_fn: Callable[[list[Tensor], list[Tensor], Any], None] | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n_averaged = zeros_function((), dtype=D.int64)
        self.register_buffer("n_averaged", n_averaged if device is None else n_averaged.to(device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        with no_grad():
            self._update(model)

    def _update(self, model: Module) -> None:
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged.item()) == 0
        for p_averaged, p_model in zip(mine, theirs, strict=False):
            p_model = p_model.detach().to(p_averaged.device)
            averaged.append(p_averaged.detach())
            current.append(p_model)
            if first:
                p_averaged.detach().copy_(p_model)
        if not first:
            if self.multi_avg_fn is not None:
                groups: dict[tuple, tuple[list, list]] = {}
                for a, c in zip(averaged, current, strict=True):
                    mine_list, theirs_list = groups.setdefault((str(a.device), a.dtype), ([], []))
                    mine_list.append(a)
                    theirs_list.append(c)
                for mine_list, theirs_list in groups.values():
                    self.multi_avg_fn(mine_list, theirs_list, self.n_averaged.to(mine_list[0].device))
            else:
                # Without a multi-tensor kernel (the CPU's case in PyTorch) the default is the per-tensor mean.
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for a, c in zip(averaged, current, strict=True):
                    a.copy_(avg_fn(a, c, self.n_averaged.to(a.device)))
        if not self.use_buffers:
            # Buffers (batch-norm statistics, ...) are not averaged: they follow the latest model.
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute every batch-norm layer's running statistics with one pass over ``loader``."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the whole pass
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate from its value to ``swa_lr`` over ``anneal_epochs`` epochs, then hold it."""

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        for value, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # The rate before annealing is recovered from the current one, so that the schedule chains.
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
