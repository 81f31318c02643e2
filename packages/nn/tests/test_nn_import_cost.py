"""Importing ``ember.nn`` (every module, function and utility) keeps the dispatcher's fast path: it
defines no tensor subclass that dispatches (such as vmap's, which ``ember.func`` defines)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_nn_defines_no_dispatching_subclass():
    code = (
        "import ember, ember.nn, ember.nn.utils, ember.nn.utils.prune, ember.nn.grad; "
        "from ember.core.dispatch import _flags; assert not _flags.subclasses"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
