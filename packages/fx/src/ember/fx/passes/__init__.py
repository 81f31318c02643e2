"""``ember.fx.passes``: passes over ``ember.fx`` graphs (PyTorch's ``torch.fx.passes``)."""

from ember.fx.passes import shape_prop, split_module

__all__ = ["shape_prop", "split_module"]
