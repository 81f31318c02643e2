"""The sparse COO ops (``ember.core.sparse`` holds the tensor type and the kernels)."""
