"""Factories: new tensors from sizes, values or another tensor's metadata."""
