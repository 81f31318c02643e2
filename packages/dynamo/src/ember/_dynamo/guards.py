"""``torch._dynamo.guards``'s path: the module ``ember.dynamo.guards`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import guards as _module

sys.modules[__name__] = _module
