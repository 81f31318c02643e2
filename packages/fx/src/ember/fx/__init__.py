"""``ember.fx``: the graph IR between capture and code generation (PyTorch's ``torch.fx``)."""
