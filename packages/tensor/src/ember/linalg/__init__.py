"""``ember.linalg``: linear algebra. The tensor core provides the vector norm."""

from ember.core.families.norms import vector_norm

__all__ = ["vector_norm"]
