"""``ember.backends.cudnn``: the cuDNN flags scripts set. Ember calls no cuDNN: ``is_available()``
is False and the flags are stored without effect, so that scripts written for CUDA run unchanged."""

from __future__ import annotations

from contextlib import contextmanager

from ember.backends._flags import BoolFlag, install

__all__ = ["flags", "is_available", "version"]


def is_available() -> bool:
    return False


def version() -> int | None:
    """The cuDNN version; None, as no cuDNN is loaded."""
    return None


@contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside the block and restore them after (``benchmark_limit`` is accepted and
    ignored: it has no value without cuDNN, as in PyTorch's CPU build)."""
    import sys

    module = sys.modules[__name__]
    saved = (module.enabled, module.benchmark, module.deterministic, module.allow_tf32)
    module.enabled, module.benchmark, module.deterministic, module.allow_tf32 = (
        enabled,
        benchmark,
        deterministic,
        allow_tf32,
    )
    try:
        yield
    finally:
        module.enabled, module.benchmark, module.deterministic, module.allow_tf32 = saved


install(
    __name__,
    {
        "enabled": BoolFlag(True, "set_enabled_cudnn"),
        "benchmark": BoolFlag(False, "set_benchmark_cudnn"),
        "deterministic": BoolFlag(False, "set_deterministic_cudnn"),
        # PyTorch 2.13 names the cuBLAS setter in this message too.
        "allow_tf32": BoolFlag(True, "set_allow_tf32_cublas"),
    },
)
