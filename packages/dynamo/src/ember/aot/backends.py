"""Compile backends built on AOT autograd, found by name.

A backend is a callable ``(GraphModule, example_inputs) -> callable``: what a graph capture hands
over and what it runs instead. They are registered here under their names and, for other packages,
declared in the entry-point group ``ember.compile_backends`` (packages/dynamo/pyproject.toml). The
registry is ``ember.dynamo.backends``'s, the one ``ember.compile`` looks names up in.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.aot.aot_autograd import aot_module_simplified
from ember.aot.compilers import nop
from ember.aot.partitioners import min_cut_rematerialization_partition
from ember.dynamo.backends.registry import list_backends, lookup_backend, register_backend
from ember.fx.graph_module import GraphModule

__all__ = ["aot_eager", "aot_eager_decomp_partition", "list_backends", "lookup_backend", "register_backend"]


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
