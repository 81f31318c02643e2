"""Views taken before their base requires grad follow it once it gains a history in place, as in PyTorch.

Each case builds a base that does not require grad, takes views of it, then writes into it (or into
one of its views) with a tensor that requires grad; the facts compared are each view's
``requires_grad``, its ``grad_fn``'s name, and the gradient that reaches the leaf.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _written_base(lib, x):
    r = lib.zeros(2, 3, dtype=lib.float64)
    views = [r[1:], r.view(6)[::2], r.t(), r[0, 1]]
    r.add_(x)
    return r, views


def _written_through_another_view(lib, x):
    r = lib.zeros(2, 3, dtype=lib.float64)
    views = [r[1], r[:, 1:], r.unsqueeze(0).expand(2, 2, 3)]
    r[0].copy_(x[1] * 2)
    return r, views


def _written_by_index(lib, x):
    r = lib.zeros(2, 3, dtype=lib.float64)
    views = [r.diagonal(), r.view(3, 2)[1:]]
    r[lib.tensor([1, 0])] = x.flip(0)
    return r, views


def _views_of_views(lib, x):
    r = lib.zeros(2, 3, dtype=lib.float64)
    v = r[:, 1:]
    views = [v, v.t()[1], v.as_strided((2,), (1,), 1)]
    r.mul_(x).add_(x)
    return r, views


def _facts(lib, case):
    x = lib.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    r, views = case(lib, x)
    facts = [(v.requires_grad, v.grad_fn.name().rsplit("::", 1)[-1] if v.grad_fn else None) for v in views]
    loss = (r * r).sum()
    for k, v in enumerate(views):
        loss = loss + (v * v).sum() * (k + 2)
    loss.backward()
    return facts, x.grad.tolist()


@needs_torch
@pytest.mark.parametrize("case", [_written_base, _written_through_another_view, _written_by_index, _views_of_views])
def test_views_follow_their_base(case):
    assert _facts(ember, case) == _facts(torch, case)


def _untouched(lib):
    x = lib.ones(3, dtype=lib.float64, requires_grad=True)
    r = lib.zeros(3, dtype=lib.float64)
    detached, ints = r.detach()[1:], lib.zeros(3, dtype=lib.int64)[1:]
    r.add_(x)
    return detached.requires_grad, ints.requires_grad


@needs_torch
def test_detached_and_integer_views_stay_out_of_the_graph():
    assert _untouched(ember) == _untouched(torch) == (False, False)


def test_a_base_forgets_dead_views():
    r = ember.zeros(4)
    kept = [r[i] for i in range(3)]
    for _ in range(1000):
        r[1:].sum()
    gc.collect()
    assert len(r._views) < 100  # the dead views' references were dropped as the list grew
    assert len(r._views.alive()) == 3 and kept


def test_a_custom_function_that_writes_its_input_makes_the_views_follow():
    class AddInPlace(ember.autograd.Function):
        @staticmethod
        def forward(ctx, r, x):
            ctx.mark_dirty(r)
            return r.add_(x)

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    x = ember.ones(3, dtype=ember.float64, requires_grad=True)
    r = ember.zeros(3, dtype=ember.float64)
    v = r[1:]
    AddInPlace.apply(r, x)
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    (v * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 3.0, 3.0]


def _no_grad_view_written(lib, write_under_no_grad: bool):
    x = lib.ones(3, dtype=lib.float64, requires_grad=True)
    r = x * 1
    with lib.no_grad():
        v = r[1:]
    with lib.no_grad() if write_under_no_grad else lib.enable_grad():
        r[:2].mul_(2)
    with lib.no_grad():
        unrecorded = (v * v).requires_grad  # allowed: nothing is recorded
    with pytest.raises(RuntimeError) as info:
        v * v
    return unrecorded, str(info.value)


@needs_torch
@pytest.mark.parametrize("write_under_no_grad", [False, True])
def test_a_view_taken_under_no_grad_cannot_be_used_after_a_write(write_under_no_grad):
    assert _no_grad_view_written(ember, write_under_no_grad) == _no_grad_view_written(torch, write_under_no_grad)
