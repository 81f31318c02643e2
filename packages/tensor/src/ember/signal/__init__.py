"""``ember.signal``: signal processing, as ``torch.signal``; today its one part is ``windows``."""

from ember.signal import windows

__all__ = ["windows"]
