"""Op families: each module registers its ops (schema, meta kernel, CPU kernel, decomposition)
and their Python surface. Importing this package registers them all; a module's own imports order
it after the families it builds on."""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
