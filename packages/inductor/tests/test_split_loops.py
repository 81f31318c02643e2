"""Innermost loops split by the divisor of their index (``codegen_cpp._split_innermost``): a body
that reads ``(x / 2)`` (a max pool's backward, a nearest upsampling) is written twice over a loop
of half the length, so that its loads are contiguous or interleaved instead of gathered."""

from __future__ import annotations

import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
import ember.nn.functional as F


def _kernels(graph) -> str:
    source = graph.source
    return source[source.index('extern "C" int ') :]


def _doubled(t):
    """Each element of the last dim twice: its index is (x / 2)."""
    return t.unsqueeze(-1).expand(*t.shape, 2).reshape(*t.shape[:-1], 2 * t.shape[-1])


@pytest.mark.parametrize(
    "fn",
    [
        lambda t, u: _doubled(t) * u,
        lambda t, u: (_doubled(t) * u).sum(-1),
        lambda t, u: (_doubled(t) * u).amax(-1),
    ],
    ids=["pointwise", "sum", "amax"],
)
def test_a_halved_index_splits_the_innermost_loop(fn):
    ember.manual_seed(0)
    t, u = ember.randn(4, 6, 32), ember.randn(4, 6, 64)
    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(t, u), fn(t, u), rtol=1e-5, atol=1e-5)
    source = _kernels(rec.graphs[0])
    assert "q < 32;" in source, source  # the loop over 64 columns runs 32 steps of two
    assert "/ 2)" not in source.split("q < 32;")[1], source  # no halved index inside it


def test_a_length_the_divisor_does_not_divide_keeps_its_loop():
    ember.manual_seed(1)
    t, u = ember.randn(4, 6, 32), ember.randn(4, 6, 63)
    fn = lambda t, u: _doubled(t)[..., :63] * u  # noqa: E731
    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(t, u), fn(t, u))
    assert "q <" not in _kernels(rec.graphs[0])


def test_max_pool_backward_matches_eager():
    """The CNN's case: the gradient of a 2x2 max pool after a ReLU, and batch norm's sums over it."""
    ember.manual_seed(2)
    x = ember.randn(4, 3, 8, 16)
    weight = ember.rand(3) + 0.5

    def loss(x, w):
        y = F.batch_norm(x, None, None, w, None, training=True).relu()
        return (F.max_pool2d(y, 2) * ember.arange(4 * 8, dtype=ember.float32).reshape(4, 8)).sum()

    want = ember.autograd.grad(loss(x.requires_grad_(True), weight.requires_grad_(True)), [x, weight])
    compiled, rec = compile_with_inductor(loss)
    got = ember.autograd.grad(compiled(x, weight), [x, weight])
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, rtol=1e-4, atol=1e-4)
    assert "q < 8;" in _kernels(rec.graphs[1])  # the backward's loops over 16 columns, in steps of two
