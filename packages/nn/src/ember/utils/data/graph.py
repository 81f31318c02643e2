"""The graph of a DataPipe: which DataPipes it reads from, recursively.

``traverse_dps(dp)`` is ``{id(dp): (dp, {id(source): (source, {...}), ...})}``. A DataPipe's
sources are the DataPipes among its attributes, looked for inside lists, tuples, sets and dict
values as well (PyTorch finds them by pickling; reading the attributes finds the same ones
without needing the DataPipe to be picklable). A DataPipe seen on the current path is not
entered again, so cycles end.
"""

from __future__ import annotations

from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["DataPipe", "DataPipeGraph", "traverse", "traverse_dps"]

DataPipe = IterDataPipe | MapDataPipe
DataPipeGraph = dict[int, tuple[DataPipe, "DataPipeGraph"]]


def _sources(value, found: list) -> None:
    if isinstance(value, IterDataPipe | MapDataPipe):
        found.append(value)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _sources(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _sources(item, found)


def _connected(datapipe) -> list:
    found: list = []
    for value in getattr(datapipe, "__dict__", {}).values():
        _sources(value, found)
    unique: dict[int, object] = {}
    for dp in found:
        unique.setdefault(id(dp), dp)
    return list(unique.values())


def _traverse(datapipe, on_path: frozenset[int]) -> DataPipeGraph:
    key = id(datapipe)
    children: DataPipeGraph = {}
    for source in _connected(datapipe):
        if id(source) not in on_path:
            children.update(_traverse(source, on_path | {key}))
    return {key: (datapipe, children)}


def traverse_dps(datapipe: DataPipe) -> DataPipeGraph:
    """The graph of ``datapipe`` and the DataPipes it reads from."""
    return _traverse(datapipe, frozenset())


def traverse(datapipe: DataPipe, only_datapipe: bool | None = None) -> DataPipeGraph:
    """``traverse_dps`` (PyTorch's older name; ``only_datapipe`` is accepted and ignored)."""
    return traverse_dps(datapipe)
