"""Derivatives of sorting and order statistics."""
