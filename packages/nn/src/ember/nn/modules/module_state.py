"""What ``Module`` does with all of its tensors at once: conversion (``to``, ``half``, ...), and
``state_dict``/``load_state_dict`` with PyTorch's key reporting.

Conversion keeps every Parameter object (optimizers and tied modules hold them) and moves the
converted storage into it; buffers are replaced, as PyTorch does. Loading copies into the existing
tensors under ``no_grad`` (or, with ``assign=True``, puts the given tensors in their place) and
reports missing and unexpected keys per module in PyTorch's wording.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ember.autograd import no_grad
from ember.core import dtypes as D
from ember.core.devices import device as Device
from ember.core.dtypes import legacy_type_name
from ember.core.tensor import Tensor
from ember.nn.parameter import Parameter, swap_payload

if TYPE_CHECKING:
    from ember.nn.modules.module import Module


def tensor_type_name(t: Tensor) -> str:
    """``Tensor.type()``'s legacy name: 'torch.FloatTensor', 'torch.cuda.LongTensor', ..."""
    return legacy_type_name(t.dtype, t.device.type)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# -- conversion ----------------------------------------------------------------------------------


def apply_to_tensors(module: Module, fn, recurse: bool = True) -> Module:
    if recurse:
        for child in module.children():
            apply_to_tensors(child, fn, True)
    for param in module._parameters.values():
        if param is None:
            continue
        with no_grad():
            new = fn(param)
        if new is not param:
            swap_payload(param, new)
        grad = param.grad
        if grad is not None:
            with no_grad():
                new_grad = fn(grad)
            if new_grad is not grad:
                # Through the dict: the grad setter would refuse a dtype the parameter had before.
                param.__dict__["_grad"] = new_grad
    for key, buf in module._buffers.items():
        if buf is not None:
            module._buffers[key] = fn(buf)
    return module


def _parse_to(*args: Any, **kwargs: Any) -> tuple[Any, Any, Any]:
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: unexpected {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, D.dtype):
            dtype = arg
        elif isinstance(arg, (str, Device, int)):
            device = Device(arg) if not isinstance(arg, Device) else arg
        elif isinstance(arg, bool):  # non_blocking given positionally
            continue
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(arg).__name__})")
    return device, dtype, memory_format


def to(module: Module, *args: Any, **kwargs: Any) -> Module:
    device, dtype, memory_format = _parse_to(*args, **kwargs)
    if dtype is not None and dtype.category not in (D.FLOATING, D.COMPLEX):
        raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")

    def convert(t: Tensor) -> Tensor:
        floating = t.dtype.category in (D.FLOATING, D.COMPLEX)
        if memory_format is not None and t.ndim in (4, 5):  # only image-like weights take a layout
            return t.to(device=device, dtype=dtype if floating else None, memory_format=memory_format)
        return t.to(device=device, dtype=dtype if floating else None)

    return module._apply(convert)


# -- saving --------------------------------------------------------------------------------------


EXTRA_STATE = "_extra_state"


def _overrides(module: Module, method: str) -> bool:
    from ember.nn.modules.module import Module

    return getattr(type(module), method) is not getattr(Module, method)


def save_local(module: Module, destination: dict, prefix: str, keep_vars: bool) -> None:
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()
    if _overrides(module, "get_extra_state"):
        destination[prefix + EXTRA_STATE] = module.get_extra_state()


def state_dict(module: Module, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False):
    if args:  # the deprecated positional form: (destination, prefix, keep_vars)
        destination = args[0]
        prefix = args[1] if len(args) > 1 else prefix
        keep_vars = args[2] if len(args) > 2 else keep_vars
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    metadata = getattr(destination, "_metadata", None)
    if metadata is not None:
        metadata[prefix[:-1]] = {"version": module._version}
    for hook in module.__dict__.get("_state_dict_pre_hooks", {}).values():
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    for hook in module._state_dict_hooks.values():
        result = hook(module, destination, prefix, {"version": module._version})
        if result is not None:
            raise RuntimeError("state_dict post-hook must return None")
    return destination


# -- loading -------------------------------------------------------------------------------------


def load_local(module, state, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs) -> None:
    for hook in module._load_state_dict_pre_hooks.values():
        hook(state, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
    persistent = {k: v for k, v in module._buffers.items() if k not in module._non_persistent_buffers_set}
    local_state = {k: v for k, v in [*module._parameters.items(), *persistent.items()] if v is not None}
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, param in local_state.items():
        key = prefix + name
        if key not in state:
            if strict:
                missing_keys.append(key)
            continue
        value = state[key]
        if not isinstance(value, Tensor):
            error_msgs.append(
                f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from '
                f"checkpoint but received {type(value)}"
            )
            continue
        if param.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
            value = value[0]
        if value.shape != param.shape:
            error_msgs.append(
                f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                f"the shape in current model is {param.shape}."
            )
            continue
        try:
            with no_grad():
                if assign:
                    _assign(module, name, param, value)
                else:
                    param.copy_(value)
        except Exception as ex:
            error_msgs.append(
                f'While copying the parameter named "{key}", whose dimensions in the model are {param.shape} and '
                f"whose dimensions in the checkpoint are {value.shape}, an exception occurred : {ex.args}."
            )
    extra_key = prefix + EXTRA_STATE
    if _overrides(module, "set_extra_state"):
        if extra_key in state:
            module.set_extra_state(state[extra_key])
        elif strict:
            missing_keys.append(extra_key)
    elif strict and extra_key in state:
        unexpected_keys.append(extra_key)
    if strict:
        for key in state:
            if not key.startswith(prefix) or key == extra_key:
                continue
            parts = key[len(prefix) :].split(".", 1)
            if len(parts) > 1:
                if parts[0] not in module._modules:
                    unexpected_keys.append(key)
            elif parts[0] not in local_state:
                unexpected_keys.append(key)


def _assign(module: Module, name: str, current: Tensor, value: Tensor) -> None:
    if isinstance(current, Parameter):
        if not isinstance(value, Parameter):
            value = Parameter(value, requires_grad=current.requires_grad)
        else:
            value.requires_grad_(current.requires_grad)
        module._parameters[name] = value
    else:
        module._buffers[name] = value


def load_state_dict(module: Module, state: Any, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
    if not isinstance(state, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state)}.")
    missing: list[str] = []
    unexpected: list[str] = []
    errors: list[str] = []
    metadata = getattr(state, "_metadata", None)
    state = OrderedDict(state)

    def load(mod: Module, local: dict, prefix: str = "") -> None:
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        mod._load_from_state_dict(local, prefix, local_metadata, True, missing, unexpected, errors)
        for name, child in mod._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                load(child, {k: v for k, v in local.items() if k.startswith(child_prefix)}, child_prefix)
        keys = _IncompatibleKeys(missing, unexpected)
        for hook in mod._load_state_dict_post_hooks.values():
            if hook(mod, keys) is not None:
                raise AssertionError(
                    "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to return new "
                    "values, if incompatible_keys need to be modified, it should be done inplace."
                )

    load(module, state)
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
    if errors:
        raise RuntimeError(
            "Error(s) in loading state_dict for {}:\n\t{}".format(type(module).__name__, "\n\t".join(errors))
        )
    return _IncompatibleKeys(missing, unexpected)
