"""The compiled common case of small eager ops (``ember.core._fastpath``, built from csrc/fastpath).

``native`` is the extension module, or None where it was not built or ``EMBER_FASTPATH=0`` is set; every
caller then runs the Python code the C stands for, with the same results and errors. Each C function
handles the common case (exact ``Tensor`` instances with int metadata, no mode, no grad) and declines
anything else by returning None (``call``: ``MISS``), leaving it to that Python code.
"""

from __future__ import annotations

import os

MISS = object()  # what native.call returns when the dispatcher's fast path does not apply

native = None
if os.environ.get("EMBER_FASTPATH", "1") != "0":
    try:
        from ember.core import _fastpath as native
    except ImportError:  # not built (no compiler at install): the Python path runs
        native = None
