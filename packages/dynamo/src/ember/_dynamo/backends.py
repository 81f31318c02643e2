"""``torch._dynamo.backends``'s path: the module ``ember.dynamo.backends`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import backends as _module

sys.modules[__name__] = _module
