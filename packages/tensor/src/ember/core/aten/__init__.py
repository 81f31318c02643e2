"""Every op of the core, one folder per kind of op (pointwise, reductions, shape, indexing,
factories, random, linalg, nn, sorting) and one module per family inside it; each module registers
its ops (schema, meta function, CPU kernel, decomposition) and their Python surface. Autograd's
derivatives (``ember.autograd.derivatives``) and vmap's rules (``ember.func._vmap.rules``) are cut
by the same kinds. Importing this package registers every op; a module's own imports order it
after the families it builds on."""

import importlib
import pkgutil

for _kind in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
    _package = importlib.import_module(f"{__name__}.{_kind}")
    for _module in sorted(m.name for m in pkgutil.iter_modules(_package.__path__)):
        importlib.import_module(f"{_package.__name__}.{_module}")
