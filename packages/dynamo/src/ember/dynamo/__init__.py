"""Bytecode-level graph capture: ``ember.compile``'s machinery (PyTorch's ``torch._dynamo``)."""
