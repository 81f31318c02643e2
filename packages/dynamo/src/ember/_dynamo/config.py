"""``torch._dynamo.config``'s path: the module ``ember.dynamo.config`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import config as _module

sys.modules[__name__] = _module
