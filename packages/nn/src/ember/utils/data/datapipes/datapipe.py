"""``IterDataPipe`` and ``MapDataPipe``: composable datasets, as ``torch.utils.data`` has them.

A DataPipe is a dataset built from other DataPipes; each step is a class registered under a
functional name (``@functional_datapipe("map")``), so ``dp.map(f).filter(g).batch(4)`` chains
them. An ``IterDataPipe`` allows one live iterator at a time: starting a new iteration resets
the DataPipe (``reset()``) and invalidates the iterators made before it, which then raise
``RuntimeError`` on their next item (as PyTorch does; ``fork()`` gives several readers).
The metaclass wraps each class's ``__iter__`` to do that bookkeeping.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeVar

from ember.utils.data.datapipes._typing import _DataPipeMeta, _DataPipeType
from ember.utils.data.dataset import Dataset, IterableDataset

__all__ = ["DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_FEEDBACK = (
    "\nFor feedback regarding this single iterator per IterDataPipe constraint, feel free "
    "to comment on this issue: https://github.com/pytorch/data/issues/45."
)


def _describe(datapipe) -> str:
    """``Name(arg=value, ...)`` from the constructor's parameters that the instance keeps."""
    try:
        names = list(inspect.signature(type(datapipe).__init__).parameters)[1:]
    except (TypeError, ValueError):
        names = []
    shown = [f"{n}={getattr(datapipe, n)!r}" for n in names if n in vars(datapipe) and n != "datapipe"]
    return f"{type(datapipe).__name__}({', '.join(shown)})"


def _invalid_message(datapipe) -> str:
    return (
        "This iterator has been invalidated because another iterator has been created "
        f"from the same IterDataPipe: {_describe(datapipe)}\n"
        "This may be caused by multiple references to the same IterDataPipe. We recommend "
        "using `.fork()` if that is necessary." + _FEEDBACK
    )


def _start_iteration(datapipe) -> int:
    """A new iteration: the previous iterators become invalid, and the DataPipe resets."""
    if getattr(datapipe, "_is_child_datapipe", False):
        return datapipe._start_child_iteration()
    datapipe._valid_iterator_id = 0 if datapipe._valid_iterator_id is None else datapipe._valid_iterator_id + 1
    datapipe.reset()
    return datapipe._valid_iterator_id


def _check_valid(datapipe, iterator_id: int) -> None:
    if getattr(datapipe, "_is_child_datapipe", False):
        if not datapipe._check_valid_iterator_id(iterator_id):
            raise RuntimeError(
                "This iterator has been invalidated, because a new iterator has been created from one of the "
                f"ChildDataPipes of {_describe(datapipe.main_datapipe)}." + _FEEDBACK
            )
    elif datapipe._valid_iterator_id != iterator_id:
        raise RuntimeError(_invalid_message(datapipe))


def _hooked_iter(iter_function: Callable) -> Callable:
    @functools.wraps(iter_function)
    def __iter__(self):
        source = iter_function(self)
        iterator_id = _start_iteration(self)
        iterator = source if source is self else iter(source)
        while True:
            _check_valid(self, iterator_id)
            try:
                item = next(iterator)
            except StopIteration:
                return
            self._number_of_samples_yielded += 1
            yield item

    __iter__._ember_hooked = True  # type: ignore[attr-defined]
    return __iter__


class _IterDataPipeMeta(_DataPipeMeta):
    def __new__(mcs, name, bases, namespace, **kwargs):
        function = namespace.get("__iter__")
        if function is not None and not getattr(function, "_ember_hooked", False) and name != "IterDataPipe":
            namespace["__iter__"] = _hooked_iter(function)
        return super().__new__(mcs, name, bases, namespace, **kwargs)


class _Family:
    """What both DataPipe families share: their functional forms (name -> ``f(source, *args, **kwargs)``)
    and their pickling and printing hooks, kept on the family's root class (``_family``)."""

    _family: ClassVar[type]

    @classmethod
    def register_function(cls, function_name: str, function: Callable) -> None:
        cls.functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name: str, cls_to_register, enable_df_api_tracing=False) -> None:
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is already taken")

        def build(source, *args, **kwargs):
            return cls_to_register(source, *args, **kwargs)

        functools.update_wrapper(build, cls_to_register, assigned=("__doc__",), updated=())
        cls.functions[function_name] = build

    def __getattr__(self, attribute_name: str):
        function = self._family.functions.get(attribute_name)
        if function is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attribute_name}")
        bound = functools.partial(function, self)
        functools.update_wrapper(bound, function, assigned=("__doc__",), updated=())
        return bound

    def __getstate__(self):
        state = self.__dict__
        if self._family.getstate_hook is not None:
            return self._family.getstate_hook(state)
        return state

    def __reduce_ex__(self, *args, **kwargs):
        if self._family.reduce_ex_hook is not None:
            try:
                return self._family.reduce_ex_hook(self)
            except NotImplementedError:
                pass
        return super().__reduce_ex__(*args, **kwargs)

    @classmethod
    def set_getstate_hook(cls, hook_fn: Callable | None) -> None:
        if cls._family.getstate_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing getstate_hook")
        cls._family.getstate_hook = hook_fn

    @classmethod
    def set_reduce_ex_hook(cls, hook_fn: Callable | None) -> None:
        if cls._family.reduce_ex_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing reduce_ex_hook")
        cls._family.reduce_ex_hook = hook_fn

    def __repr__(self) -> str:
        return self.repr_hook(self) if self.repr_hook is not None else type(self).__qualname__

    def __str__(self) -> str:
        return self.str_hook(self) if self.str_hook is not None else type(self).__qualname__

    def __dir__(self) -> list[str]:
        return list(super().__dir__()) + list(self.functions)


class IterDataPipe(IterableDataset[T_co], _Family, metaclass=_IterDataPipeMeta):
    """An iterable DataPipe; subclasses define ``__iter__`` (and ``__len__`` where they can)."""

    functions: ClassVar[dict[str, Callable]] = {}
    reduce_ex_hook: Callable | None = None
    getstate_hook: Callable | None = None
    str_hook: Callable | None = None
    repr_hook: Callable | None = None
    type = _DataPipeType(Any)
    _valid_iterator_id: int | None = None
    _number_of_samples_yielded: int = 0

    def __iter__(self) -> Iterator[T_co]:
        return self

    def reset(self) -> None:
        """Called when a new iteration starts; DataPipes with state between items clear it here."""


IterDataPipe._family = IterDataPipe


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe of data frames (PyTorch's marker class; Ember has no data-frame pipes)."""

    def _is_dfpipe(self) -> bool:
        return True


class MapDataPipe(Dataset[T_co], _Family, metaclass=_DataPipeMeta):
    """A map-style DataPipe: ``__getitem__`` by key (and ``__len__``)."""

    functions: ClassVar[dict[str, Callable]] = {}
    reduce_ex_hook: Callable | None = None
    getstate_hook: Callable | None = None
    str_hook: Callable | None = None
    repr_hook: Callable | None = None
    type = _DataPipeType(Any)


MapDataPipe._family = MapDataPipe


class DataChunk(list[T]):
    """A batch made by ``batch()``: a list whose ``raw_iterator`` walks the items themselves."""

    def __init__(self, items) -> None:
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self) -> Iterator[T]:
        yield from super().__iter__()

    def raw_iterator(self) -> Iterator[T]:
        yield from self.items
