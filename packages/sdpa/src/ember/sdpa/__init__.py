"""Ember's attention: kernels in ``ember.sdpa.kernels``, their float64 ``reference``, and the
dispatcher ops that call them (``ember.sdpa.ops``, registered on import)."""

from ember.sdpa import (
    ops,  # noqa: F401  (registers the attention ops)
    ops_cuda,  # noqa: F401  (registers the CUDA flash-attention op)
    ops_efficient,  # noqa: F401  (registers the memory-efficient attention ops)
)
