"""``torch._dynamo.exc``'s path: the module ``ember.dynamo.exc`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import exc as _module

sys.modules[__name__] = _module
