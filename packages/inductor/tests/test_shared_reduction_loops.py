"""Reductions of one row over the same loops share them: one loop nest with an accumulator each
(``codegen_cpp._joins``), the bodies' loads and common values made once (batch norm's backward sums
dy and dy * (x - mean) over each channel). Each sum keeps its own order, so the bits are those of
the reduction compiled alone."""

from __future__ import annotations

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember


def _kernels(graph) -> str:
    source = graph.source
    return source[source.index('extern "C" int ') :]


def _alone(fn, *args):
    """``fn`` compiled by itself."""
    compiled, _ = compile_with_inductor(fn)
    return compiled(*args)


@pytest.fixture
def threads():
    before = ember.get_num_threads()
    yield ember.set_num_threads
    ember.set_num_threads(before)


def _channel_sums(dy, x):
    return dy.sum((0, 2, 3)), (dy * (x - 0.25)).sum((0, 2, 3))


def _row_sums(g, x):
    return g.sum(-1), (g * x).sum(-1), x.amax(-1)


@pytest.mark.parametrize(
    "fn, shape, reductions",
    [(_channel_sums, (6, 5, 9, 11), 2), (_row_sums, (40, 70), 3)],
    ids=["batch-norm-backward", "layer-norm-backward"],
)
def test_reductions_over_the_same_loops_run_in_one_loop_nest(fn, shape, reductions):
    ember.manual_seed(0)
    dy, x = ember.randn(*shape), ember.randn(*shape)
    compiled, rec = compile_with_inductor(fn)
    got = compiled(dy, x)
    for ours, want in zip(got, fn(dy, x), strict=True):
        assert_same(ours, want, rtol=1e-5, atol=1e-4)
    kernels = _kernels(rec.graphs[0])
    pragmas = [line for line in kernels.splitlines() if "#pragma omp simd reduction" in line]
    assert len(pragmas) == 1 and pragmas[0].count(" reduction(") == reductions, pragmas
    # each result is the bits of its reduction compiled alone
    for j, ours in enumerate(got):
        alone = _alone(lambda a, b, j=j: fn(a, b)[j], dy, x)
        np.testing.assert_array_equal(ours.numpy(), alone.numpy())


def test_a_reduction_that_reads_another_keeps_its_own_loops(threads):
    # the variance reads the mean: two loop nests, one after the other
    ember.manual_seed(1)
    x = ember.randn(30, 200) * 3 + 1
    fn = lambda t: ((t - t.mean(-1, keepdim=True)) ** 2).sum(-1)  # noqa: E731
    compiled, rec = compile_with_inductor(fn)
    assert_same(compiled(x), fn(x), rtol=1e-5, atol=1e-4)
    pragmas = [line for line in _kernels(rec.graphs[0]).splitlines() if "#pragma omp simd reduction" in line]
    assert len(pragmas) == 2 and all(p.count(" reduction(") == 1 for p in pragmas), pragmas


def test_the_same_bits_on_any_thread_count(threads):
    ember.manual_seed(2)
    dy, x = ember.randn(16, 8, 24, 24), ember.randn(16, 8, 24, 24)
    compiled, _ = compile_with_inductor(_channel_sums)
    results = []
    for n in (1, 2, 3):
        threads(n)
        results.append([t.numpy() for t in compiled(dy, x)])
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
