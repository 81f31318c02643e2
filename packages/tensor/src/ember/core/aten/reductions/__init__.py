"""Reductions: sums, means, products, extrema, moments, norms and scans."""
