"""The derivative table's entries (see ``ember.autograd.registry``), cut by kind of op as the core's
``ember.core.aten`` is: one folder per kind, one module per family; ``nondifferentiable`` lists the
ops whose outputs carry no gradient.

Every module here is imported, so a family's formulas need no registration elsewhere.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
    importlib.import_module(_module.name)
