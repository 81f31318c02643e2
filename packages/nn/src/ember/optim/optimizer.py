"""``Optimizer``: parameter groups, per-parameter state, and PyTorch's state-dict format.

``state_dict()`` numbers the parameters in group order (0, 1, ...) and returns
``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``, the same layout as
PyTorch's, so a checkpoint's structure is interchangeable. Loading casts floating state to each
parameter's dtype and device, except ``step``, which stays as saved.

Each subclass's ``step`` is wrapped once per class so that step pre- and post-hooks run around it.
Steps run with gradient recording off (``differentiable=True`` is not supported).
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from ember.autograd import no_grad
from ember.core import dtypes as D
from ember.core.tensor import Tensor
from ember.nn.modules.hooks import RemovableHandle
from ember.nn.parameter import clear_grad

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook", "required"]

# Step hooks for every optimizer: the global pre-hooks run before an optimizer's own, the global
# post-hooks after its own, as in PyTorch.
_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` before every optimizer's step; it may return new ``(args, kwargs)``."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


class _RequiredParameter:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        from ember.nn.modules.module_state import tensor_type_name

        return tensor_type_name(obj)
    return type(obj).__qualname__


def check_tensor_lr(lr: Any) -> None:
    """PyTorch's error for a learning rate given as a tensor of more than one element."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def require_nonnegative(*checks: tuple[str, float]) -> None:
    """``ValueError("Invalid <what>: <value>")`` for the first value that is not >= 0 (nan included)."""
    for what, value in checks:
        if not value >= 0.0:
            raise ValueError(f"Invalid {what}: {value}")


def refuse_unsupported(name: str, fused: Any = None, capturable: bool = False, differentiable: bool = False) -> None:
    """Options that ask for GPU fusion or differentiating through the step: not supported, said so loudly."""
    if fused:
        raise NotImplementedError(f"{name}: fused=True is not supported; use foreach=True for the multi-tensor path")
    if capturable:
        raise NotImplementedError(f"{name}: capturable=True (CUDA graph capture) is not supported")
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True is not supported")


def _hooked_step(step: Callable) -> Callable:
    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # The hooks see the step's whole argument tuple, the optimizer first, as PyTorch's do.
        self = args[0]
        for hook in [*_global_optimizer_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
                args, kwargs = result
        out = step(*args, **kwargs)
        self._optimizer_step_code()
        for hook in [*self._optimizer_step_post_hooks.values(), *_global_optimizer_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


class Optimizer:
    """Base class of the optimizers: ``params`` is an iterable of tensors or of dicts (parameter groups)."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hook_tables()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + _typename(params)
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    _HOOK_TABLES = (
        "_optimizer_step_pre_hooks",
        "_optimizer_step_post_hooks",
        "_optimizer_state_dict_pre_hooks",
        "_optimizer_state_dict_post_hooks",
        "_optimizer_load_state_dict_pre_hooks",
        "_optimizer_load_state_dict_post_hooks",
    )

    def _init_hook_tables(self) -> None:
        # Missing ones only: an unpickled optimizer keeps none, a live one keeps its own.
        for name in self._HOOK_TABLES:
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())

    def _patch_step_function(self) -> None:
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked_step(cls.step)

    def _optimizer_step_code(self) -> None:
        """Called after each step; a profiler's marker point in PyTorch, nothing here."""

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hook_tables()
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- groups ----------------------------------------------------------------------------------

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors in "
                "sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        named = [p for p in param_group["params"] if isinstance(p, tuple)]
        if named:
            if len(named) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = [name for name, _ in named]
            param_group["params"] = [p for _, p in named]
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error",
                stacklevel=3,
            )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients and hooks ---------------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                clear_grad(p, set_to_none)

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _register(self, table: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict()`` builds its result."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` after ``state_dict()``; a returned dict replaces the result."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` before loading, given a shallow copy; a returned dict is loaded instead."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after ``load_state_dict()``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        raise NotImplementedError

    def _run_closure(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        from ember.autograd import enable_grad

        with enable_grad():
            return closure()

    # -- state dicts -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
        if isinstance(value, Tensor):
            if key == "step":
                return value
            if param.dtype.category in (D.FLOATING, D.COMPLEX):
                return value.to(dtype=param.dtype, device=param.device)
            return value.to(device=param.device)
        if isinstance(value, dict):
            return {k: Optimizer._cast(param, v, key=k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups, strict=True)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
                strict=True,
            )
        )
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast(param, v)
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups, strict=True):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- shared by the subclasses ------------------------------------------------------------------

    @staticmethod
    def _use_foreach(group: dict[str, Any]) -> bool:
        # PyTorch's default (foreach=None) picks the multi-tensor path on CUDA only; on the CPU, the loop.
        foreach = group.get("foreach")
        if foreach is None:
            return all(p.device.type == "cuda" for p in group["params"]) and bool(group["params"])
        return bool(foreach)


def is_compiling() -> bool:
    """False when run. ``ember.compile``'s capture, which reads the mark below, answers True in its graph: a
    compiled step then keeps step counts as tensors (no ``.item()``) and takes no NumPy shortcut, as
    PyTorch's optimizers do under ``torch.compile``. (This package cannot import the capture's own.)"""
    return False


is_compiling.__ember_is_compiling__ = True


def step_without_grad(step: Callable) -> Callable:
    """Run an optimizer's step with gradient recording off, as PyTorch's non-differentiable steps do."""

    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        with no_grad():
            return step(self, *args, **kwargs)

    return wrapper
