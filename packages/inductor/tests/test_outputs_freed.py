"""A compiled call leaves no reference cycle behind: its outputs (and the buffers of the call) are
freed when the caller drops them, with the cyclic collector off, on both wrappers."""

from __future__ import annotations

import gc
import weakref

import pytest

import ember


def _fn(x, w):
    return ((x @ w).relu() + 1).sum(-1)


@pytest.mark.parametrize("dynamic", [False, True], ids=["generated wrapper", "step wrapper (dynamic sizes)"])
def test_outputs_are_freed_when_dropped(dynamic):
    ember._dynamo.reset()
    compiled = ember.compile(_fn, dynamic=dynamic)
    w = ember.randn(4, 3)
    for n in (5, 7):
        compiled(ember.randn(n, 4), w)
    gc.disable()
    try:
        out = compiled(ember.randn(6, 4), w)
        ref = weakref.ref(out)
        del out
        assert ref() is None
    finally:
        gc.enable()
