"""Settings applied across a DataPipe graph: sharding, shuffling and random seeds."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from ember.utils.data.datapipes.iter.combinatorics import _fresh_seed
from ember.utils.data.datapipes.iter.grouping import SHARDING_PRIORITIES
from ember.utils.data.graph import DataPipe, DataPipeGraph, traverse_dps

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_seed", "apply_shuffle_settings", "get_all_graph_pipes"]


def get_all_graph_pipes(graph: DataPipeGraph) -> list[DataPipe]:
    """Every DataPipe of ``graph`` once, from the output back to the sources."""
    seen: set[int] = set()
    result: list[DataPipe] = []

    def walk(graph: DataPipeGraph) -> None:
        for key, (datapipe, sub_graph) in graph.items():
            if key in seen:
                continue
            seen.add(key)
            result.append(datapipe)
            walk(sub_graph)

    walk(graph)
    return result


def _has_method(datapipe, name: str) -> bool:
    return inspect.ismethod(getattr(datapipe, name, None))


def apply_sharding(
    datapipe: DataPipe, num_of_instances: int, instance_id: int, sharding_group=SHARDING_PRIORITIES.DEFAULT
) -> DataPipe:
    """Give every sharding DataPipe of the graph its share (``apply_sharding``); two on one path
    is an error, as it would drop data twice."""

    def walk(graph: DataPipeGraph, applied) -> None:
        for datapipe_, sub_graph in graph.values():
            here = applied
            if _has_method(datapipe_, "apply_sharding"):
                if applied is not None:
                    raise RuntimeError(
                        "Sharding twice on a single pipeline is likely unintended and will cause data loss. "
                        f"Sharding already applied to {applied} while trying to apply to {datapipe_}"
                    )
                if len(inspect.signature(datapipe_.apply_sharding).parameters) < 3:
                    datapipe_.apply_sharding(num_of_instances, instance_id)
                else:
                    datapipe_.apply_sharding(num_of_instances, instance_id, sharding_group=sharding_group)
                here = datapipe_
            walk(sub_graph, here)

    walk(traverse_dps(datapipe), None)
    return datapipe


def apply_shuffle_settings(datapipe: DataPipe, shuffle: bool | None = None) -> DataPipe:
    """Turn every shuffler of the graph on or off; with ``shuffle=True`` and none, add one at the end."""
    if shuffle is None:
        return datapipe
    shufflers = [
        dp
        for dp in get_all_graph_pipes(traverse_dps(datapipe))
        if _has_method(dp, "set_shuffle") and _has_method(dp, "set_seed")
    ]
    if not shufflers and shuffle:
        warnings.warn(
            "`shuffle=True` was set, but the datapipe does not contain a `Shuffler`. Adding one at the end. "
            "Be aware that the default buffer size might not be sufficient for your task.",
            stacklevel=2,
        )
        datapipe = datapipe.shuffle()
        shufflers = [datapipe]
    for shuffler in shufflers:
        shuffler.set_shuffle(shuffle)
    return datapipe


def apply_random_seed(datapipe: DataPipe, rng) -> DataPipe:
    """Give each random DataPipe of the graph (one with ``set_seed``) a seed drawn from ``rng``,
    an ``ember.Generator``."""
    for dp in get_all_graph_pipes(traverse_dps(datapipe)):
        if _has_method(dp, "set_seed"):
            dp.set_seed(_fresh_seed(rng))
    return datapipe


def apply_shuffle_seed(datapipe: DataPipe, rng: Any) -> DataPipe:
    """``apply_random_seed`` under its deprecated name."""
    warnings.warn(
        "`apply_shuffle_seed` is deprecated since 1.12 and will be removed in the future releases. "
        "Please use `apply_random_seed` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return apply_random_seed(datapipe, rng)
