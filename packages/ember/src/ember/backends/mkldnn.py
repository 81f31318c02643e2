"""``ember.backends.mkldnn``: oneDNN, which Ember's CPU kernels do not use, so ``is_available()``
is False (PyTorch's x86 builds answer True) and ``enabled`` is stored without effect."""

from __future__ import annotations

from contextlib import contextmanager

from ember.backends._flags import BoolFlag, install

__all__ = ["flags", "is_available"]


def is_available() -> bool:
    return False


@contextmanager
def flags(enabled=False, deterministic=False):
    import sys

    module = sys.modules[__name__]
    saved = (module.enabled, module.deterministic)
    module.enabled, module.deterministic = enabled, deterministic
    try:
        yield
    finally:
        module.enabled, module.deterministic = saved


install(
    __name__,
    {"enabled": BoolFlag(True, "set_enabled_mkldnn"), "deterministic": BoolFlag(False, "set_deterministic_mkldnn")},
)
