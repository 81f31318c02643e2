"""Derivatives of views and shape ops."""
