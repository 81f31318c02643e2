"""``ember.backends``: the backend switches PyTorch scripts touch (``ember.backends.cudnn.benchmark
= True``, ``ember.backends.cuda.matmul.allow_tf32``, ``ember.backends.mps.is_available()``...).

Ember runs these scripts unchanged; each submodule says which of its flags have an effect (on the
CPU, none do). The top-level settings ``ember.set_float32_matmul_precision`` and
``ember.use_deterministic_algorithms`` live in ``settings``.
"""

from ember.backends import (
    cpu,
    cuda,
    cudnn,
    cusparselt,
    kleidiai,
    mha,
    mkl,
    mkldnn,
    mps,
    nnpack,
    openmp,
    opt_einsum,
    python_native,
    settings,
)

__all__ = [
    "cpu",
    "cuda",
    "cudnn",
    "cusparselt",
    "kleidiai",
    "mha",
    "mkl",
    "mkldnn",
    "mps",
    "nnpack",
    "openmp",
    "opt_einsum",
    "python_native",
    "settings",
]
