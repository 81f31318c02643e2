"""``ember.nn``: modules, parameters, ``functional``, ``init`` and ``utils``, as ``torch.nn``."""

from ember.nn import attention, functional, init, utils
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn.modules.activation import (
    CELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    LogSigmoid,
    PReLU,
    Softmin,
    Softsign,
)
from ember.nn.parallel import DataParallel
from ember.nn.parameter import Buffer, Parameter

__all__ = [
    *_modules_all,
    # The activations that came after the first list of ``ember.nn.modules``.
    "CELU",
    "GLU",
    "SELU",
    "Hardsigmoid",
    "Hardswish",
    "LogSigmoid",
    "PReLU",
    "Softmin",
    "Softsign",
    "Buffer",
    "DataParallel",
    "Parameter",
    "attention",
    "functional",
    "init",
    "utils",
]
