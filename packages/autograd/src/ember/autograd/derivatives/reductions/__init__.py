"""Derivatives of reductions, extrema, moments, norms and scans."""
