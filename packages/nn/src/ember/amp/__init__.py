"""Mixed precision: ``autocast`` regions and the ``GradScaler`` that keeps float16 gradients finite."""

from ember.amp.autocast_mode import autocast, is_autocast_available
from ember.amp.custom import custom_bwd, custom_fwd
from ember.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
