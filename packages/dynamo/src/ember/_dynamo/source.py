"""``torch._dynamo.source``'s path: the module ``ember.dynamo.source`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import source as _module

sys.modules[__name__] = _module
