"""Decorators of DataPipe classes: ``functional_datapipe`` (register a functional name),
``non_deterministic`` with ``guaranteed_datapipes_determinism``, and the type checks
``argument_validation`` and ``runtime_validation`` (off inside ``runtime_validation_disabled``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import wraps
from typing import Any, get_type_hints

from ember.utils.data.datapipes._typing import _DataPipeMeta
from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = [
    "argument_validation",
    "functional_datapipe",
    "guaranteed_datapipes_determinism",
    "non_deterministic",
    "runtime_validation",
    "runtime_validation_disabled",
]


class functional_datapipe:
    """``@functional_datapipe("name")`` makes ``dp.name(*args)`` build the decorated class from ``dp``."""

    def __init__(self, name: str, enable_df_api_tracing: bool = False) -> None:
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        if (isinstance(cls, type) and issubclass(cls, IterDataPipe)) or (
            isinstance(cls, non_deterministic) and cls.cls is not None
        ):
            IterDataPipe.register_datapipe_as_function(self.name, cls, self.enable_df_api_tracing)
        elif isinstance(cls, type) and issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        elif not isinstance(cls, type) or not isinstance(cls, _DataPipeMeta):
            raise TypeError("`functional_datapipe` can only decorate IterDataPipe")
        return cls


_determinism = False


class guaranteed_datapipes_determinism:
    """Inside this context (it takes effect when made), building a non-deterministic DataPipe is a ``TypeError``."""

    def __init__(self) -> None:
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Marks an IterDataPipe class as non-deterministic, always (``@non_deterministic``) or when a
    function of the constructor's arguments says so (``@non_deterministic(fn)``)."""

    cls: type | None = None

    def __init__(self, arg: type | Callable[..., bool]) -> None:
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError(
                    f"Only `IterDataPipe` can be decorated with `non_deterministic`, but {arg.__name__} is found"
                )
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TypeError(
                    f"{self.cls.__name__} is non-deterministic, but you set 'guaranteed_datapipes_determinism'. "
                    "You can turn off determinism for this DataPipe if that is acceptable for your application"
                )
            return self.cls(*args, **kwargs)
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} is found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs):
        result = self.deterministic_fn(*args, **kwargs)
        if not isinstance(result, bool):
            raise TypeError(
                "deterministic_fn of `non_deterministic` decorator is required "
                f"to return a boolean value, but {type(result)} is found"
            )
        if _determinism and result:
            raise TypeError(
                f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                "'guaranteed_datapipes_determinism'. You can turn off determinism "
                "for this DataPipe if that is acceptable for your application"
            )
        return self.cls(*args, **kwargs)


def argument_validation(f: Callable) -> Callable:
    """Check, at each call, the arguments whose hints are DataPipe types (``IterDataPipe[int]``):
    the value must be an IterDataPipe whose item type is a subtype of the hint's."""
    signature = inspect.signature(f)
    hints = get_type_hints(f)

    @wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            hint = hints.get(name)
            if isinstance(hint, _DataPipeMeta):
                if not isinstance(value, IterDataPipe):
                    raise TypeError(f"Expected argument '{name}' as a IterDataPipe, but found {type(value)}")
                if not value.type.issubtype(hint.type):
                    raise TypeError(
                        f"Expected type of argument '{name}' as a subtype of hint {hint.type}, but found {value.type}"
                    )
        return f(*args, **kwargs)

    return wrapper


_runtime_validation_enabled = True


class runtime_validation_disabled:
    """Inside this context (it takes effect when made), ``runtime_validation`` checks nothing."""

    def __init__(self) -> None:
        global _runtime_validation_enabled
        self.prev = _runtime_validation_enabled
        _runtime_validation_enabled = False

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def runtime_validation(f: Callable) -> Callable:
    """Decorate ``__iter__``: each item must be an instance of the DataPipe's item type."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @wraps(f)
    def wrapper(self):
        if not _runtime_validation_enabled:
            yield from f(self)
            return
        for item in f(self):
            if not self.type.issubtype_of_instance(item):
                raise RuntimeError(f"Expected an instance as subtype of {self.type}, but found {item}({type(item)})")
            yield item

    return wrapper
