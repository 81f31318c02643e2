"""Derivatives of pointwise ops."""
