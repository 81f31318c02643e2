"""``ember._subclasses``: tensor subclasses of the tracing stack (fake tensors), at PyTorch's paths."""

from ember._subclasses.fake_tensor import (
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
    UnsupportedFakeTensorException,
)

__all__ = ["DynamicOutputShapeException", "FakeTensor", "FakeTensorMode", "UnsupportedFakeTensorException"]
