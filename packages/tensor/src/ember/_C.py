"""``ember._C``: the few names of PyTorch's ``torch._C`` that Python code written against PyTorch's
extension protocols uses (``DisableTorchFunction``, ``_disabled_torch_function_impl``, ...). Ember
has no C extension of that name; these are its Python objects under PyTorch's spelling."""

from ember.core.function_protocol import (
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
)
from ember.core.function_protocol import is_torch_function_enabled as _is_torch_function_enabled
from ember.core.function_protocol import is_torch_function_mode_enabled as _is_torch_function_mode_enabled
from ember.core.subclassing import _disabled_torch_dispatch_impl
from ember.utils._python_dispatch import _get_current_dispatch_mode, _get_dispatch_mode_stack

__all__ = [
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_disabled_torch_dispatch_impl",
    "_disabled_torch_function_impl",
    "_get_current_dispatch_mode",
    "_get_dispatch_mode_stack",
    "_is_torch_function_enabled",
    "_is_torch_function_mode_enabled",
]
