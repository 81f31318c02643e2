"""The derivative table's entries, one module per op family (see ``ember.autograd.registry``).

Every module in this folder is imported, so a family's formulas need no registration elsewhere.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
