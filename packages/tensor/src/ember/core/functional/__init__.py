"""The Python surface of the nn ops with ``torch.nn.functional``'s names and signatures.

The ops themselves are defined in ``ember.core.aten``; the functions here parse arguments the
way ``torch.nn.functional`` does and call them. ``ember.nn.functional`` re-exports this namespace.
Each module of this folder lists its functions in ``__all__``; importing the package collects them.
"""

import importlib
import pkgutil

__all__: list[str] = []
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    _mod = importlib.import_module(f"{__name__}.{_module}")
    for _name in _mod.__all__:
        if _name in globals() and globals()[_name] is not _mod:  # a module may share its function's name
            raise RuntimeError(f"ember.core.functional.{_name} is defined twice (second in {_mod.__name__})")
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)
