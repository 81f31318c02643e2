"""NumPy's floating-point warnings, off around our kernels, cheaply.

PyTorch returns inf and nan silently (``log(0)``, ``x / 0``, overflow); NumPy warns, and under ``-W
error`` a warning is an exception. ``np.errstate`` costs about a microsecond per use, as much as a
whole small op, so the hot paths set NumPy's own context variable instead (a fifth of that). If a
NumPy release moves those internals, ``silence``/``restore`` fall back to ``np.errstate``.

    token = silence()
    try:
        result = np.log(array)
    finally:
        restore(token)
"""

from __future__ import annotations

import numpy as np

try:
    from numpy._core._ufunc_config import _extobj_contextvar
    from numpy._core.umath import _make_extobj

    _IGNORE = _make_extobj(all="ignore")

    def silence():
        return _extobj_contextvar.set(_IGNORE)

    def restore(token) -> None:
        _extobj_contextvar.reset(token)

    # What ``silence`` sets, for compiled callers that set it themselves (ember.core._fastpath).
    quiet_contextvar = (_extobj_contextvar, _IGNORE)

except ImportError:  # another NumPy layout: the public, slower way

    def silence():
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore(token) -> None:
        token.__exit__(None, None, None)

    quiet_contextvar = None
