"""Helpers shared by the passes: subgraph matching and partition checks."""
