"""``ember.nn``: modules, parameters, ``functional``, ``init`` and ``utils``, as ``torch.nn``."""

from ember.nn import attention, functional, init, utils
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn.parallel import DataParallel
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    *_modules_all,
    "Buffer",
    "DataParallel",
    "Parameter",
    "UninitializedBuffer",
    "UninitializedParameter",
    "attention",
    "functional",
    "init",
    "utils",
]
