"""Pointwise ops: unary math and activations, binary arithmetic and comparisons, ternary ops."""
