"""PyTorch's ``torch._functorch`` paths for AOT autograd; the code lives in ``ember.aot``."""
