"""Lazy modules: layers whose input size is read from their first input.

``LazyModuleMixin`` holds ``UninitializedParameter``/``UninitializedBuffer`` placeholders and a
forward pre-hook; the first call runs ``initialize_parameters(input)``, which gives them their
shapes and PyTorch's initialization, removes the hook, and turns the module into its ordinary
class (``LazyLinear`` becomes ``Linear``). Loading a state dict into a lazy module shapes the
placeholders from it. The lazy layers themselves sit in the files of their ordinary forms.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

from ember.autograd import no_grad
from ember.nn.parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(LazyModuleMixin._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters, with_kwargs=True)
        warnings.warn(
            "Lazy modules are a new feature under heavy development so changes to the API or functionality can "
            "happen at any moment.",
            stacklevel=2,
        )

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module still waits for its shape."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    @staticmethod
    def _lazy_load_hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for name, value in itertools.chain(module._parameters.items(), module._buffers.items()):
            key = prefix + name
            if key in state_dict and value is not None and is_lazy(value) and not is_lazy(state_dict[key]):
                with no_grad():
                    value.materialize(tuple(state_dict[key].shape))

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
