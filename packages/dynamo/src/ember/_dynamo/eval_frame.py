"""``torch._dynamo.eval_frame``'s path: the module ``ember.dynamo.eval_frame`` itself, so that settings and state are shared."""

import sys

from ember.dynamo import eval_frame as _module

sys.modules[__name__] = _module
