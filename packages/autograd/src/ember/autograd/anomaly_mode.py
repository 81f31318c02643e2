"""``ember.autograd.anomaly_mode``: PyTorch's module path for ``detect_anomaly`` and
``set_detect_anomaly`` (defined in ``ember.autograd.anomaly``)."""

from ember.autograd.anomaly import detect_anomaly, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly"]
