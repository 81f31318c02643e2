"""Decomposition tables: which function stands for an op when a graph is lowered (``torch._decomp``).

A decomposition is written once, next to its op in the core (``op.decomposition``, set by
``op.register_decomposition``), where eager calls without a kernel use it too. This module collects
them into tables keyed by ``OpOverload`` for passes that lower a graph, chiefly
``make_fx(f, decomposition_table=core_aten_decompositions())``, which traces each listed op's
decomposition in its place:

- ``decomposition_table`` (also ``global_decomposition_table["post_autograd"]``): every op's
  decomposition, plus those registered here with ``register_decomposition``;
- ``core_aten_decompositions()``: the decompositions of every functional ``aten`` op that is not
  tagged ``core``; applied repeatedly, they leave only core ops (``packages/fx/README.md``, "The core
  op set"; ``tests/test_core_decompositions.py`` holds every op of the tables to it);
- ``get_decompositions(ops)``: the part of the global table for the given overloads and packets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ember.core.dispatch import OpOverload, OpOverloadPacket, all_ops

__all__ = [
    "core_aten_decompositions",
    "decomposition_table",
    "get_decompositions",
    "global_decomposition_table",
    "register_decomposition",
    "remove_decompositions",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_TYPES = ("post_autograd", "pre_autograd", "meta")

global_decomposition_table: dict[str, dict[OpOverload, Callable]] = {t: {} for t in _TYPES}
decomposition_table = global_decomposition_table["post_autograd"]


def _check_type(type: str) -> None:
    if type not in _TYPES:
        raise AssertionError(f"type must be one of post_autograd, pre_autograd, or meta, got {type}")


def _overloads(op: Any) -> list[OpOverload]:
    if isinstance(op, OpOverload):
        return [op]
    if isinstance(op, OpOverloadPacket):
        return [getattr(op, name) for name in op.overloads()]
    raise AssertionError(f"expected an OpOverload or OpOverloadPacket, got {type(op).__name__}")


def _add_op_to_registry(registry: dict, op: Any, fn: Callable) -> None:
    """``op`` (an overload, or every overload of a packet) → ``fn`` in ``registry``; twice is an error."""
    for overload in _overloads(op):
        if overload in registry:
            raise RuntimeError(f"duplicate registrations for {overload}")
        registry[overload] = fn


def register_decomposition(
    aten_op: Any, registry: dict | None = None, *, type: str = "post_autograd", unsafe: bool = False
) -> Callable[[_F], _F]:
    """A decorator registering a function as the decomposition of ``aten_op`` (an ``OpOverload``, an
    ``OpOverloadPacket`` meaning all its overloads, or a list of them) in ``registry``, by default
    the global table of ``type``. The function is returned unchanged.

    Only the table changes: eager calls of the op keep their kernel. A decomposition the core's
    eager calls should use too belongs next to the op (``op.register_decomposition``).
    """
    _check_type(type)

    def decorator(fn: _F) -> _F:
        target = global_decomposition_table[type] if registry is None else registry
        ops = aten_op if isinstance(aten_op, list | tuple) else [aten_op]
        for op in ops:
            _add_op_to_registry(target, op, fn)
        return fn

    return decorator


def get_decompositions(
    aten_ops: Sequence[OpOverload | OpOverloadPacket], type: str = "post_autograd"
) -> dict[OpOverload, Callable]:
    """The decompositions of ``aten_ops`` in the global table of ``type``: a packet gives every one of
    its overloads that has one; an op without one is left out silently, as in PyTorch."""
    _check_type(type)
    registry = global_decomposition_table[type]
    by_packet: dict[Any, list[OpOverload]] = {}
    for op in registry:
        by_packet.setdefault(op.packet, []).append(op)
    found: dict[OpOverload, Callable] = {}
    for op in aten_ops:
        if isinstance(op, OpOverloadPacket):
            for overload in by_packet.get(op, ()):
                found[overload] = registry[overload]
        elif isinstance(op, OpOverload) and op in registry:
            found[op] = registry[op]
    return found


def remove_decompositions(decompositions: dict, aten_ops: Iterable[OpOverload | OpOverloadPacket]) -> None:
    """Drop ``aten_ops`` (overloads, or every overload of a packet) from ``decompositions`` in place."""
    for op in aten_ops:
        for overload in _overloads(op):
            decompositions.pop(overload, None)


def _is_lowered(op: OpOverload) -> bool:
    """Whether ``core_aten_decompositions`` lowers ``op``: a functional aten op outside the core set."""
    return op.namespace == "aten" and op.form == "functional" and "core" not in op.tags


def core_aten_decompositions() -> dict[OpOverload, Callable]:
    """The decompositions that lower every functional aten op of the tables to the core set.

    A fresh dict each call, so that a caller may add or remove entries (PyTorch returns a mapping
    for the same use). In-place and ``out=`` forms are not in it: functionalization turns them into
    their functional forms first.
    """
    return {op: fn for op, fn in decomposition_table.items() if _is_lowered(op)}


def _collect_core_decompositions() -> None:
    for op in all_ops():
        if op.decomposition is not None and op not in decomposition_table:
            decomposition_table[op] = op.decomposition


_collect_core_decompositions()


# Decompositions that live above the core (``ember._decomp.factories``): ops without a derivative of
# their own, for which a decomposition on the op would make it an implicit composite that every
# dispatch mode sees through; lowering alone replaces them.
from ember._decomp import factories as _factories  # noqa: E402, F401
