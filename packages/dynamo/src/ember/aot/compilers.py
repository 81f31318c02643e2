"""Compilers that keep a graph as it is: the ones the ``aot_eager`` backends and tests use."""

from __future__ import annotations

from collections.abc import Callable

from ember.aot.aot_autograd import make_boxed_func
from ember.fx.graph_module import GraphModule


def nop(fx_g: GraphModule, _example_inputs) -> Callable:
    """The graph module itself, run as Python (a boxed call)."""
    return make_boxed_func(fx_g.forward)


def print_compile(fx_g: GraphModule, _example_inputs) -> Callable:
    """Print the graph's code, then run it as Python."""
    print(fx_g.code)
    return make_boxed_func(fx_g.forward)
