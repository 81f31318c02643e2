"""Small helpers that ``torch.nn.functional`` exposes: ``boolean_dispatch`` (one function that calls
one of two by a flag argument) and ``assert_int_or_pair``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.tensor import Tensor

__all__ = ["Tensor", "assert_int_or_pair", "boolean_dispatch"]


def boolean_dispatch(
    arg_name: str, arg_index: int, default: bool, if_true: Callable, if_false: Callable, module_name: str | None,
    func_name: str,
) -> Callable:  # fmt: skip
    """A function that calls ``if_true`` or ``if_false`` by the flag argument ``arg_name`` (position
    ``arg_index``, ``default`` when absent)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        flag = default
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    fn.__name__ = fn.__qualname__ = func_name
    return fn


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)
