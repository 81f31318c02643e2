"""The one registry of compile backends, by name.

A backend is a callable ``(GraphModule, example_inputs) -> callable``. Names come from
``register_backend`` (``ember._dynamo.register_backend``) and from the entry-point group
``ember.compile_backends``, where other packages (the code generator, plugins) declare theirs;
``ember.compile(backend=...)`` also takes a callable as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

_BACKENDS: dict[str, Callable] = {}
_TAGS: dict[str, tuple[str, ...]] = {}
_GROUP = "ember.compile_backends"


class InvalidBackend(ValueError, RuntimeError):
    """A backend name that nothing registers (a RuntimeError, as PyTorch's, and a ValueError)."""

    def __init__(self, name: str, detail: str = "") -> None:
        available = ", ".join(list_backends(exclude_tags=()))
        text = detail or f"unknown compile backend {name!r}"
        super().__init__(
            f"Invalid backend: {text}; available backends: {available} "
            "(see ember._dynamo.list_backends(); a callable (GraphModule, example_inputs) -> callable also works)"
        )
        self.name = name


def register_backend(
    compiler_fn: Callable | None = None, name: str | None = None, tags: Sequence[str] = ()
) -> Callable:
    """Register ``compiler_fn`` under ``name`` (its ``__name__`` by default); usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name, tags)
    if not callable(compiler_fn):
        raise TypeError(f"register_backend: a backend must be callable, got {type(compiler_fn).__name__}")
    key = name or compiler_fn.__name__
    if key in _BACKENDS and _BACKENDS[key] is not compiler_fn:
        raise RuntimeError(f"a compile backend named {key!r} is already registered")
    _BACKENDS[key] = compiler_fn
    _TAGS[key] = tuple(tags)
    return compiler_fn


def _entry_points() -> dict:
    from importlib.metadata import entry_points

    return {entry.name: entry for entry in entry_points(group=_GROUP)}


def lookup_backend(name: str | Callable) -> Callable:
    """The backend registered as ``name`` (here or in the ``ember.compile_backends`` entry points)."""
    if callable(name):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a compile backend is a name or a callable, got {type(name).__name__}")
    if name in _BACKENDS:
        return _BACKENDS[name]
    entry = _entry_points().get(name)
    if entry is not None:
        fn = entry.load()
        _BACKENDS.setdefault(name, fn)
        _TAGS.setdefault(name, ())
        return fn
    if name == "inductor":
        raise InvalidBackend(
            name,
            "backend 'inductor' needs Ember's code generator (the ember-inductor package), which is not installed; "
            "use backend='eager' or 'aot_eager' until then",
        )
    raise InvalidBackend(name)


def list_backends(exclude_tags: Sequence[str] | None = ("debug", "experimental")) -> list[str]:
    """The names of the backends one can pass to ``ember.compile`` (without those tagged ``exclude_tags``)."""
    excluded = set(exclude_tags or ())
    names = set(_BACKENDS) | set(_entry_points())
    return sorted(n for n in names if not excluded & set(_TAGS.get(n, ())))
