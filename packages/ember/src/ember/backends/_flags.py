"""Flag modules: a backend module whose boolean settings are checked when assigned.

``ember.backends.cudnn.benchmark = 1`` must fail as PyTorch's does (a ``RuntimeError`` naming the
setter), which a plain module attribute cannot do. So each flag module replaces its own class by a
``ModuleType`` subclass holding ``BoolFlag`` descriptors; the values live on the module object.
"""

from __future__ import annotations

import sys
import types


class BoolFlag:
    """A boolean module setting; ``setter`` is the name PyTorch's error message gives."""

    def __init__(self, default: bool, setter: str) -> None:
        self.default = default
        self.setter = setter

    def __set_name__(self, owner, name: str) -> None:
        self.slot = f"_flag_{name}"

    def __get__(self, module, owner=None):
        if module is None:
            return self
        return module.__dict__.get(self.slot, self.default)

    def __set__(self, module, value) -> None:
        if not isinstance(value, bool):
            raise RuntimeError(f"{self.setter} expects a bool, but got {type(value).__name__}")
        module.__dict__[self.slot] = value


def install(module_name: str, flags: dict[str, BoolFlag]) -> None:
    """Give module ``module_name`` the checked ``flags``."""
    module = sys.modules[module_name]
    module.__class__ = type(f"{module_name.rsplit('.', 1)[-1]}_flags", (types.ModuleType,), dict(flags))
