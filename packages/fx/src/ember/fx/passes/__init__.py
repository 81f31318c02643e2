"""``ember.fx.passes``: passes over ``ember.fx`` graphs (PyTorch's ``torch.fx.passes``)."""
