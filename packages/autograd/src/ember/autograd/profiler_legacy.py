"""``ember.autograd.profiler_legacy``: PyTorch's module path for the legacy profiler; Ember has one
profiler, ``ember.autograd.profiler.profile``, under both names."""

from ember.autograd.profiler import profile

__all__ = ["profile"]
