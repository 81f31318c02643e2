"""PyTorch's module path ``torch._inductor``: the same objects as ``ember.inductor``."""

from ember.inductor import compile_fx, config

__all__ = ["compile_fx", "config"]
