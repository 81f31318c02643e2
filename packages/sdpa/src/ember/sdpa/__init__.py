"""Ember's attention: kernels in ``ember.sdpa.kernels`` and their float64 ``reference``."""
