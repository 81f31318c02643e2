"""``ember.linalg``: linear algebra. The tensor core provides the vector norm and the SVD."""

from ember.core.aten.linalg.svd import svd, svdvals
from ember.core.aten.reductions.norms import vector_norm

__all__ = ["svd", "svdvals", "vector_norm"]
