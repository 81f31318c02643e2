"""``torch._dynamo.convert_frame``'s path: the module ``ember.dynamo.convert_frame`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import convert_frame as _module

sys.modules[__name__] = _module
