"""``ember.quasirandom``: low-discrepancy sequences, as ``torch.quasirandom``."""

from ember.quasirandom.sobol import SobolEngine

__all__ = ["SobolEngine"]
