"""Learning-rate schedulers, as ``torch.optim.lr_scheduler``.

Each scheduler computes the next rate from the current one (PyTorch's "chainable" form), not from a
closed formula, so that its floating-point sequence is PyTorch's exactly and schedulers can be
stacked. The constructor takes the first step (epoch 0); ``step()`` then advances one epoch.
``state_dict()`` is every attribute but the optimizer.

The classes are written in ``_lr_base`` and, the cyclic ones, in ``_lr_cycles``; this module is
their home: their ``__module__`` is this one, PyTorch's path, so pickles match.
"""

from __future__ import annotations

from ember.optim._lr_base import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiplicativeLR,
    MultiStepLR,
    OneCycleLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
    _LRScheduler,
)
from ember.optim._lr_cycles import ChainedScheduler, CosineAnnealingWarmRestarts, CyclicLR

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]

for _cls in (*(globals()[name] for name in __all__), _LRScheduler):
    _cls.__module__ = __name__
