"""``torch._functorch.config``'s path: the module ``ember.aot.config`` itself, so that settings are shared."""

import sys

from ember.aot import config as _module

sys.modules[__name__] = _module
