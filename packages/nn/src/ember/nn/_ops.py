"""The top-level names (``ember.zeros``, ``ember.float32``, ``ember.no_grad``, ...) that ember-nn uses.

The meta-package ``ember`` lies to the right of this package, so modules here cannot import it;
this namespace gathers the same names from the packages below (the core and autograd).
"""

from __future__ import annotations

from types import SimpleNamespace

from ember.autograd import is_grad_enabled, no_grad
from ember.core.api import functions
from ember.core.devices import device
from ember.core.dtypes import ALL as _DTYPES
from ember.core.tensor import Tensor

ops = SimpleNamespace(
    **functions,
    **{d.name: d for d in _DTYPES},
    Tensor=Tensor,
    device=device,
    no_grad=no_grad,
    is_grad_enabled=is_grad_enabled,
)
