"""``torch._functorch.config``: the settings of AOT autograd (``ember.aot.config``)."""

from ember.aot.config import functionalize_rng_ops, unknown_size_hint

__all__ = ["functionalize_rng_ops", "unknown_size_hint"]
