"""Flattening and unflattening leave no reference cycle behind: the leaves are freed as soon as the
caller drops them, not when the cyclic collector next runs (a compiled graph's large outputs must be
reusable memory on the next call)."""

from __future__ import annotations

import gc
import weakref

import ember
from ember.utils._pytree import tree_flatten, tree_unflatten


def test_leaves_are_freed_without_the_cyclic_collector():
    gc.disable()
    try:
        leaf = ember.ones(3)
        ref = weakref.ref(leaf)
        leaves, spec = tree_flatten({"a": [leaf, (1, leaf)]})
        rebuilt = tree_unflatten(leaves, spec)
        assert rebuilt["a"][0] is leaf
        del leaf, leaves, rebuilt
        assert ref() is None
    finally:
        gc.enable()


def test_a_compiled_graphs_output_is_freed_when_dropped():
    compiled = ember.compile(lambda x: (x * 2).sin(), backend="eager")
    x = ember.ones(8)
    compiled(x)
    gc.disable()
    try:
        out = compiled(x)
        ref = weakref.ref(out)
        del out
        assert ref() is None
    finally:
        gc.enable()
