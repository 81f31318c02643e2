"""Derivatives of indexing, scatter/gather and masking ops."""
