"""``ember.return_types``: named tuples returned by ops with several results (``ember.max(x, 0)``)."""

from ember.core.return_types import *  # noqa: F403
from ember.core.return_types import __all__  # noqa: F401
