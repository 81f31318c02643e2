"""Linear algebra: matrix products, einsum and the SVD."""
