"""AOT autograd: functions and modules traced ahead of time into forward and backward graphs.

``aot_function(fn, fw_compiler, bw_compiler)`` traces the joint forward and backward graph of
``fn`` with fake tensors, splits it with a partitioner (``default_partition`` saves what eager
autograd saves; ``min_cut_rematerialization_partition`` recomputes cheap ops instead of saving
them), gives each graph to its compiler and runs the compiled graphs inside an
``autograd.Function``. ``aot_module_simplified`` is what a compile backend calls on the graph it
receives; ``ember.aot.backends`` holds the backends ``aot_eager`` and
``aot_eager_decomp_partition``.
"""

from __future__ import annotations

from ember.aot import config
from ember.aot.aot_autograd import (
    aot_function,
    aot_module,
    aot_module_simplified,
    make_boxed_compiler,
    make_boxed_func,
)
from ember.aot.compilers import nop, print_compile
from ember.aot.partitioners import default_partition, min_cut_rematerialization_partition

__all__ = [
    "aot_function",
    "aot_module",
    "aot_module_simplified",
    "config",
    "default_partition",
    "make_boxed_compiler",
    "make_boxed_func",
    "min_cut_rematerialization_partition",
    "nop",
    "print_compile",
]
