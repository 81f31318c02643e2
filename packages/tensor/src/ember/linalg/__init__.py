"""``ember.linalg``: linear algebra. The tensor core provides the vector norm and the SVD."""

from ember.core.families.norms import vector_norm
from ember.core.families.svd import svd, svdvals

__all__ = ["svd", "svdvals", "vector_norm"]
