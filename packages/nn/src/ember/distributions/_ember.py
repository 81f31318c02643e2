"""The top-level names (``ember.randn``, ``ember.float64``, ``ember.no_grad``, ...) the distributions use.

The meta-package ``ember`` lies to the right of ember-nn, so these modules cannot import it; this
namespace gathers the same names from the packages below it (the core and autograd), under the
name ``ember`` so that the code reads as user code does."""

from __future__ import annotations

from types import SimpleNamespace

import ember.autograd as _autograd
import ember.core as _core
import ember.linalg as _linalg
import ember.nn as _nn
import ember.special as _special
from ember.autograd import enable_grad, is_grad_enabled, no_grad
from ember.core.api import functions
from ember.core.dtypes import ALIASES, ALL

_names = {name: getattr(_core, name) for name in _core.__all__}
_names.update(functions)
_names.update({d.name: d for d in ALL})
_names.update(ALIASES)
_names.update(
    autograd=_autograd,
    linalg=_linalg,
    special=_special,
    nn=_nn,
    no_grad=no_grad,
    enable_grad=enable_grad,
    is_grad_enabled=is_grad_enabled,
)
ember = SimpleNamespace(**_names)
