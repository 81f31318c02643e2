"""Ember: the PyTorch 2 stack in readable Python packages. ``import ember as torch``.

Only this meta-package ships ``ember/__init__.py``; the other packages ship their own
sub-packages (``ember.logs``, ``ember.core``, ...). Extending ``__path__`` lets Python find those
wherever they are installed, editable installs included.

The names below are PyTorch's top level: the dtypes, ``Tensor``, ``tensor``, ``device`` and every
function the op families offer (``ember.add``, ``ember.zeros``, ...).
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from ember import (
    autograd,  # noqa: F401  (installs the autograd level of the dispatcher)
    logs,  # noqa: F401  (reads EMBER_LOGS)
)
from ember.autograd import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.core import *  # noqa: F403
from ember.core import functions as _functions
from ember.core.devices import autoload_backends as _autoload_backends
from ember.core.dtypes import ALIASES as _ALIASES
from ember.core.dtypes import ALL as _ALL_DTYPES

globals().update(_functions)
globals().update({d.name: d for d in _ALL_DTYPES})
globals().update(_ALIASES)
_autoload_backends()

# Imported on first use, as their start-up cost is their own: ``ember.distributed``, ``ember.func``, ``ember.library``,
# ``ember.utils``.
_LAZY_SUBPACKAGES = ("distributed", "func", "library", "utils")


def __getattr__(name: str):
    if name in _LAZY_SUBPACKAGES:
        import importlib

        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


try:
    __version__ = _version("ember")
except _PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
