"""Indexing: basic and advanced indexing, index ops, scatter and gather, masking."""
