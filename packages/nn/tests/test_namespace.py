"""``ember.nn`` and ``ember.optim`` load on first use from the top level, with torch's names."""

from __future__ import annotations

import subprocess
import sys

import ember.core.functional as core_functional
import ember.nn.functional as F


def test_nn_and_optim_load_on_first_use():
    code = (
        "import sys, ember; assert 'ember.nn' not in sys.modules and 'ember.optim' not in sys.modules; "
        "print(ember.nn.Linear.__name__, ember.optim.AdamW.__name__, ember.optim.lr_scheduler.StepLR.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["Linear", "AdamW", "StepLR"]


# Functions ``ember.nn.functional`` extends (more modes) and that call the core's for the rest.
EXTENDED = {"interpolate"}


def test_functional_offers_every_core_function():
    for name in core_functional.__all__:
        if name in EXTENDED:
            assert getattr(F, name).__module__.startswith("ember.nn.functional.")
        else:
            assert getattr(F, name) is getattr(core_functional, name)
    assert callable(F.linear) and callable(F.bilinear) and callable(F.scaled_dot_product_attention)
