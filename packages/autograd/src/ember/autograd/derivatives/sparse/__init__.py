"""Derivatives of the sparse COO ops (``ember.core.aten.sparse``)."""
