"""``ember.backends.cpu``: ``get_cpu_capability``, the widest vector instruction set the CPU kernels use.

Ember's CPU kernels run on NumPy, which picks its SIMD code at run time; the answer names the widest
of NumPy's detected features in PyTorch's words ("AVX512", "AVX2", "DEFAULT")."""

from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    import numpy as np

    features = getattr(np, "__cpu_features__", None)
    if features is None:  # NumPy moved it; fall back to the internal module
        from numpy._core._multiarray_umath import __cpu_features__ as features
    if features.get("AVX512F") and features.get("AVX512BW"):
        return "AVX512"
    if features.get("AVX2"):
        return "AVX2"
    if features.get("SVE"):
        return "SVE"
    return "DEFAULT"
