"""``torch._dynamo.testing``'s path: the module ``ember.dynamo.testing`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import testing as _module

sys.modules[__name__] = _module
