"""Compiled programs kept across processes: a warm start skips AOT autograd's traces and partition.

Within a process ``aot_function`` keeps each compiled program by its call signature. A compiler
backend whose compiled graphs another process can load (the code generator's, through its graph
cache) passes a ``cache`` to ``aot_module_simplified``, an object with

    key(signature)     the disk key of one call signature of its graph, or None: not kept
    load(key)          the ``SavedProgram`` under ``key``, or None
    save(key, saved)   keep it
    handle(compiled)   a name of a compiled graph that another process can restore, or None
    restore(handle)    the compiled graph of that name, or None when it is gone

A program is saved when every graph it runs has a handle, and restored only when every handle
restores. What is saved is the runtime's plan (``CompiledPlan``) with its graphs as handles, and the
output spec; the key is the backend's to make complete (the graph, its inputs, the settings and
the code that traced and partitioned it). While the logs ask for AOT autograd's graphs
(``aot_graphs``, ``aot_joint_graph``), programs are traced again, not loaded.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ember.aot._logging import graphs_logged
from ember.aot._metadata import ViewAndMutationMeta
from ember.aot._runtime import CompiledPlan, CompiledProgram

log = logging.getLogger("ember.aot")

# hits, misses and saves of this process; tests read them
stats = {"hits": 0, "misses": 0, "saves": 0}


@dataclasses.dataclass
class SavedProgram:
    """A compiled program as plain data: its plan with handles for graphs."""

    plan: CompiledPlan
    out_spec: Any
    needs_autograd: bool


def load_program(cache: Any, signature: tuple) -> CompiledProgram | None:
    """The program saved for ``signature``, its graphs restored; None when there is none, when a
    graph is gone, or when the logs ask for the graphs (the program is traced again to show them)."""
    key = cache.key(signature)
    if key is None or graphs_logged():
        return None
    saved = cache.load(key)
    forward = cache.restore(saved.plan.forward) if saved is not None else None
    backward = None
    if forward is not None and saved.plan.backward is not None:
        backward = cache.restore(saved.plan.backward)
    if forward is None or (saved.plan.backward is not None and backward is None):
        stats["misses"] += 1
        return None
    stats["hits"] += 1
    log.info("AOT autograd: a compiled program from the disk cache (%s)", key[:12])
    plan = dataclasses.replace(saved.plan, forward=forward, backward=backward)
    return CompiledProgram(plan, saved.out_spec, saved.needs_autograd)


def save_program(cache: Any, signature: tuple, program: CompiledProgram) -> None:
    plan = program.plan
    forward = cache.handle(plan.forward)
    backward = cache.handle(plan.backward) if plan.backward is not None else None
    if forward is None or (plan.backward is not None and backward is None):
        return
    key = cache.key(signature)
    if key is None:
        return
    # The fake outputs belong to this process's trace; the runtime reads only the outputs' descriptions.
    meta = ViewAndMutationMeta(list(plan.meta.outputs), [], list(plan.meta.mutated_grad_inputs))
    saved_plan = dataclasses.replace(plan, meta=meta, forward=forward, backward=backward)
    cache.save(key, SavedProgram(saved_plan, program.out_spec, program.needs_autograd))
    stats["saves"] += 1
