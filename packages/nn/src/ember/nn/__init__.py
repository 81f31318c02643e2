"""``ember.nn``: modules, parameters, ``functional``, ``init`` and ``utils``, as ``torch.nn``."""

from ember.nn import attention, common_types, functional, grad, init, utils
from ember.nn.factory import factory_kwargs
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
    "common_types",
    "factory_kwargs",
    "grad",
    "functional",
    "init",
    "utils",
]
