"""Sparse COO tensors: the tensor type (``coo``), construction (``construct``), the kernel table
(``kernels``) and its entries (``structure``, ``pointwise``, ``products``), printing, and the functions
of ``ember.sparse`` (``api``). The ops they add are registered in ``ember.core.aten.sparse``."""
