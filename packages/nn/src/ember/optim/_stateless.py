"""``swap_in_optimizer_params_and_state``: run an optimizer, for the length of a ``with`` block, on other
parameter tensors and another state dict (fake tensors to trace the step, say), then restore it.

The state dict is in ``Optimizer.state_dict()``'s layout: per-parameter state keyed by packed ids, and
param groups whose ``params`` are those ids. The given tensors take the live parameters' places in
group order. In-place updates of the given state's tensors show through; anything else the step does
to the state (a new entry, a replaced tensor) stays inside the block.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ember.core.tensor import Tensor
from ember.optim.optimizer import Optimizer

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _checked_state(state: Any) -> dict:
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids to "
            f"per-param state dicts, got {type(state).__name__}."
        )
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _checked_groups(optimizer: Optimizer, groups: Any) -> list[dict]:
    if not isinstance(groups, list):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, got "
            f"{type(groups).__name__}."
        )
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    return groups


def _checked_ids(idx: int, live: dict, saved: Any) -> list[int]:
    if not isinstance(saved, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = saved.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed by packed "
            "parameter ids."
        )
    if len(live["params"]) != len(ids):
        raise RuntimeError(
            f"swapin_optim_state param group {idx} has a different number of params than the live optimizer "
            "param group."
        )
    only_saved = [k for k in saved if k not in live]
    only_live = [k for k in live if k not in saved]
    if only_saved or only_live:
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live optimizer "
            f"group keys for group {idx}. Keys only in swap-in: {only_saved}. Keys only in live: {only_live}."
        )
    return ids


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(
    optimizer: Optimizer, swapin_parameters: dict[str, Tensor], swapin_optim_state: dict[str, Any]
) -> Iterator[None]:
    """Within the block, ``optimizer`` steps ``swapin_parameters`` with ``swapin_optim_state``'s state and
    hyperparameters; on exit, its own parameters, groups and state are back."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(swapin_optim_state.get("state"))
    groups = _checked_groups(optimizer, swapin_optim_state.get("param_groups"))
    tensors = list(swapin_parameters.values())
    plan, offset, seen = [], 0, set()
    for idx, (live, saved) in enumerate(zip(optimizer.param_groups, groups, strict=True)):
        ids = _checked_ids(idx, live, saved)
        seen.update(ids)
        if offset + len(ids) > len(tensors):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match optimizer.param_groups ordering."
            )
        plan.append((live, saved, tensors[offset : offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids from "
            f"param_groups[*]['params']; got extra keys {extra!r}."
        )

    original_state = optimizer.state
    # Shallow copies: restoring them puts back the very same ``params`` lists.
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict = defaultdict(dict)
        for live, saved, params in plan:
            live["params"] = params
            live.update({k: v for k, v in saved.items() if k != "params"})
            for param, pid in zip(params, saved["params"], strict=True):
                # A copy of each entry: in-place tensor updates reach the caller's dict, new keys do not.
                swapped[param] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots, strict=True):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
