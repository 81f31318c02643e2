"""Compile backends built on AOT autograd, found by name.

A backend is a callable ``(GraphModule, example_inputs) -> callable``: what a graph capture hands
over and what it runs instead. They are registered here under their names and, for other packages,
declared in the entry-point group ``ember.compile_backends`` (packages/dynamo/pyproject.toml), where
``ember.compile`` will look them up.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.aot.aot_autograd import aot_module_simplified
from ember.aot.compilers import nop
from ember.aot.partitioners import min_cut_rematerialization_partition
from ember.fx.graph_module import GraphModule

__all__ = ["aot_eager", "aot_eager_decomp_partition", "list_backends", "lookup_backend", "register_backend"]

_BACKENDS: dict[str, Callable] = {}


def register_backend(compiler_fn: Callable | None = None, name: str | None = None):
    """Register ``compiler_fn`` under ``name`` (its ``__name__`` by default); usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name)
    key = name or compiler_fn.__name__
    if key in _BACKENDS:
        raise RuntimeError(f"a compile backend named {key!r} is already registered")
    _BACKENDS[key] = compiler_fn
    return compiler_fn


def lookup_backend(name: str | Callable) -> Callable:
    """The backend registered as ``name`` (here or in the ``ember.compile_backends`` entry points)."""
    if callable(name):
        return name
    if name not in _BACKENDS:
        from importlib.metadata import entry_points

        for entry in entry_points(group="ember.compile_backends"):
            if entry.name == name:
                return entry.load()
        raise ValueError(f"unknown compile backend {name!r}; registered: {', '.join(list_backends())}")
    return _BACKENDS[name]


def list_backends() -> list[str]:
    return sorted(_BACKENDS)


@register_backend
def aot_eager(gm: GraphModule, example_inputs: list, **kwargs) -> Callable:
    """AOT autograd's forward and backward graphs, run as Python."""
    return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop, **kwargs)


@register_backend
def aot_eager_decomp_partition(gm: GraphModule, example_inputs: list, **kwargs) -> Callable:
    """As ``aot_eager``, on core ops only (the core decompositions) and with the min-cut partitioner."""
    return aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=nop,
        bw_compiler=nop,
        decompositions=core_decompositions(),
        partition_fn=min_cut_rematerialization_partition,
        **kwargs,
    )


def core_decompositions() -> dict:
    """The table that decomposes every op into the core op set (``ember._decomp``)."""
    from ember._decomp import core_aten_decompositions

    return core_aten_decompositions()
