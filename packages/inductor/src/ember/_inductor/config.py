"""``ember._inductor.config``: the code generator's settings (``ember.inductor.config`` itself)."""

import sys

from ember.inductor import config as _config

sys.modules[__name__] = _config
