"""Derivatives of matrix products and the SVD."""
