"""Derivatives of the neural-network ops."""
