"""The user's additions to the weights-only allow-list (``ember.serialization.add_safe_globals``), and
how a global named in a checkpoint finds its Ember object.

A checkpoint that PyTorch wrote names PyTorch's classes (``torch.nn.modules.linear.Linear``); Ember
keeps its classes at the same paths under ``ember`` (``ember.nn.modules.linear.Linear``), so a
``torch.`` name is read as the ``ember.`` one. The weights-only unpickler accepts such a global only
if the user allowed the object (by adding the object itself, or ``(object, "name")``); the full
unpickler (``weights_only=False``) imports it.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any

# "module.qualname" -> object, as the user allowed them.
_allowed: dict[str, Any] = {}


def _name_of(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if module is None or qualname is None:
        raise TypeError(f"add_safe_globals: {obj!r} has no module and name; pass (obj, 'module.name')")
    return f"{module}.{qualname}"


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Allow these globals in ``ember.load(..., weights_only=True)``: each an object (a class, a
    function) or ``(object, "module.name")`` naming it as the checkpoint does."""
    if not isinstance(safe_globals, list | tuple):
        raise TypeError(f"add_safe_globals expects a list, got {type(safe_globals).__name__}")
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise ValueError(f"add_safe_globals: expected (object, 'module.name'), got {entry!r}")
            obj, name = entry
        else:
            obj, name = entry, _name_of(entry)
        _allowed[name] = obj


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """What ``add_safe_globals`` added (objects, or ``(object, name)`` where a name was given)."""
    out = []
    for name, obj in _allowed.items():
        try:
            own = _name_of(obj)
        except TypeError:
            own = None
        out.append(obj if own == name else (obj, name))
    return out


def clear_safe_globals() -> None:
    _allowed.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> Iterator[None]:
    """``with safe_globals([...]):`` allows the globals for the block only."""
    saved = dict(_allowed)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _allowed.clear()
        _allowed.update(saved)


def ember_name(full: str) -> str:
    """``torch.nn.modules.linear.Linear`` -> ``ember.nn.modules.linear.Linear``; other names unchanged."""
    if full.startswith("torch."):
        return "ember." + full[len("torch.") :]
    return full


def allowed(full: str) -> Any | None:
    """The user-allowed object for a checkpoint's global, by its name or its Ember name."""
    found = _allowed.get(full)
    if found is None:
        found = _allowed.get(ember_name(full))
    return found


def allowed_objects() -> list[Any]:
    return list(_allowed.values())


def import_ember_equivalent(module: str, name: str) -> Any | None:
    """The object at the Ember path of a ``torch.`` global, or None where Ember has none."""
    if module != "torch" and not module.startswith("torch."):
        return None
    target = "ember" + module[len("torch") :]
    try:
        obj: Any = importlib.import_module(target)
    except ImportError:
        return None
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj
