"""Ember: the PyTorch 2 stack in readable Python packages. ``import ember as torch``.

Only this meta-package ships ``ember/__init__.py``; the other packages ship their own
sub-packages (``ember.logs``, ``ember.core``, ...). Extending ``__path__`` lets Python find those
wherever they are installed, editable installs included.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from ember import logs  # noqa: F401  (reads EMBER_LOGS)

try:
    __version__ = _version("ember")
except _PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
