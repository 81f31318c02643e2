"""The multi-tensor steps' grouping: parameters and their state split by (device, dtype).

PyTorch's ``foreach=True`` path runs each update stage over a whole group of tensors before the
next stage (``_foreach_mul_``, ``_foreach_addcmul_``, ...), which on a GPU is one fused launch per
stage. The core has no multi-tensor kernels, so a stage here is a loop of the per-tensor op; the
order of operations, and so every rounding, is the one PyTorch's multi-tensor path uses, which is
what makes ``foreach=True`` give PyTorch's ``foreach=True`` numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def group_by_device_and_dtype(*lists: Sequence[Any]) -> list[tuple[list[Any], ...]]:
    """Split parallel lists (params first) into groups whose params share device and dtype, order kept."""
    groups: dict[tuple, tuple[list[Any], ...]] = {}
    for i, param in enumerate(lists[0]):
        key = (str(param.device), param.dtype)
        if key not in groups:
            groups[key] = tuple([] for _ in lists)
        for out, values in zip(groups[key], lists, strict=True):
            out.append(values[i])
    return list(groups.values())


def prepared_grads(params: list, grads: list, steps: list, weight_decay: float, maximize: bool) -> list:
    """The first stages every multi-tensor step shares: gradients negated under ``maximize``, each
    step count advanced, and ``weight_decay * param`` added to the gradients (coupled decay).
    The parameters' ``.grad`` tensors are never written: decay goes into fresh tensors (or into the
    negated copies, which are already fresh)."""
    if maximize:
        grads = [-g for g in grads]
    for s in steps:
        s.add_(1)
    return coupled_weight_decay(params, grads, weight_decay, maximize)


def coupled_weight_decay(params: list, grads: list, weight_decay: float, fresh: bool) -> list:
    """``grads`` plus ``weight_decay * params``; in place when the gradients are ``fresh`` copies."""
    if weight_decay == 0:
        return grads
    if fresh:
        for g, p in zip(grads, params, strict=True):
            g.add_(p, alpha=weight_decay)
        return grads
    return [g.add(p, alpha=weight_decay) for g, p in zip(grads, params, strict=True)]


def functional_path(
    name: str,
    params: Sequence[Any],
    foreach: bool | None,
    single: Callable,
    multi: Callable,
    *,
    state_steps: Sequence[Any] | None = None,
    differentiable: bool = False,
    capturable: bool = False,
    fused: bool | None = None,
) -> Callable:
    """The update a functional form (``ember.optim.adam.adam``, ...) runs: PyTorch's argument checks,
    then the multi-tensor path when ``foreach`` asks for it (by default only on CUDA), else the loop."""
    from ember.core.tensor import Tensor
    from ember.optim.optimizer import refuse_unsupported

    if state_steps is not None and not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    refuse_unsupported(name, fused=fused, capturable=capturable, differentiable=differentiable)
    if foreach is None:
        foreach = bool(params) and all(p.device.type == "cuda" for p in params)
    return multi if foreach else single
