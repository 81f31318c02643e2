"""``ember.cond`` and ``ember.while_loop``: control flow on tensor values, run eagerly.

PyTorch captures both branches (or the loop body) as subgraphs so that a compiled graph keeps the
choice inside; here they run as Python control flow, with PyTorch's checks of the arguments and
of what the functions return. Under ``ember.compile`` reading the predicate's value is a graph
break, so compiled code gives the same results with the choice made between graphs.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from ember.core.tensor import Tensor

__all__ = ["cond", "while_loop"]


def _check_pred(pred: Any) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
        return builtins.bool(pred.item())
    if isinstance(pred, builtins.bool | builtins.int | builtins.float):
        return builtins.bool(pred)
    raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")


def cond(
    pred: bool | int | float | Tensor,
    true_fn: Callable,
    false_fn: Callable,
    operands: tuple | list = (),
) -> Any:
    """``true_fn(*operands)`` if ``pred`` holds, else ``false_fn(*operands)``.

    ``pred`` is a Python bool or number, or a tensor of one element.
    """
    chosen = true_fn if _check_pred(pred) else false_fn
    return chosen(*operands)


_CARRIED = (Tensor, builtins.int, builtins.float, builtins.bool)


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"Tensor(size={tuple(value.shape)}, dtype={value.dtype})"
    return repr(value)


def _check_carried(outputs: tuple, carried: tuple) -> None:
    if len(outputs) != len(carried):
        raise RuntimeError(
            "Expected body_fn_output and carried_inputs to have same number of outputs but got "
            f"lhs:{[_describe(o) for o in outputs]} and rhs:{[_describe(c) for c in carried]}"
        )
    for i, (out, before) in enumerate(zip(outputs, carried, strict=True)):
        if isinstance(before, Tensor) != isinstance(out, Tensor):
            raise RuntimeError(
                f"Expected body_fn_output and carried_inputs to have same metadata but found: pair[{i}] differ in "
                f"type: {type(out).__name__} vs {type(before).__name__}"
            )
        if isinstance(before, Tensor):
            for field in ("dtype", "shape", "device"):
                a, b = getattr(out, field), getattr(before, field)
                if a != b:
                    raise RuntimeError(
                        f"Expected body_fn_output and carried_inputs to have same metadata but found: pair[{i}] "
                        f"differ in '{field}: {a} vs {b}'"
                    )


def _check_cond_result(result: Any) -> bool:
    if isinstance(result, builtins.bool):
        return result
    if isinstance(result, Tensor) and result.ndim == 0 and result.dtype.name == "bool":
        return builtins.bool(result.item())
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {result}")


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> Any:
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` holds; the last carried values.

    ``carried_inputs`` holds tensors and Python numbers; each step's outputs must match them in
    number, kind, dtype, shape and device. ``cond_fn`` returns a bool or a boolean 0-dim tensor.
    """
    if not (callable(cond_fn) and callable(body_fn)):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, tuple | list):
        raise RuntimeError(f"Expect carried_inputs to be a tuple or a list but got {type(carried_inputs).__name__}.")
    for value in carried_inputs:
        if not isinstance(value, _CARRIED):
            raise RuntimeError(
                f"Expect carried_inputs to be a tuple of tensors, ints, floats or bools, but got {_describe(value)}."
            )
    carried: tuple = tuple(carried_inputs)
    result: Any = carried
    while _check_cond_result(cond_fn(*carried)):
        result = body_fn(*carried)
        outputs = tuple(result) if isinstance(result, tuple | list) else (result,)
        _check_carried(outputs, carried)
        carried = outputs
    return result
