"""Random ops in generated code: Philox of the graph's seed and offset, against eager's stream.

rand, randint, bernoulli and dropout give eager's numbers bit for bit (the same counters, the same
arithmetic); randn to a few ulps (the C library's log and cos); distributions are checked with
fixed seeds against bounds a wrong distribution fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from inductor_testing import compile_with_inductor

import ember
import ember.nn.functional as F
from ember.inductor import config


def _np(t):
    return t.detach().to(ember.float64).numpy() if t.dtype.is_floating_point else t.numpy()


def draws(x, p):
    return (
        ember.rand(3, 5) * 2,
        ember.randint(-4, 10, (4, 4)),
        ember.randint(7, (3,), dtype=ember.int32),
        ember.bernoulli(p),
        ember.bernoulli(x, 0.3),
        ember.rand_like(x, dtype=ember.float16),
        ember.rand(6, dtype=ember.bfloat16),
        *ember.native_dropout(x, 0.4, True),
    )


def _compiled(fn):
    compiled, rec = compile_with_inductor(fn)
    return compiled, rec


@pytest.fixture(scope="module")
def compiled_draws():
    return _compiled(draws)


def test_random_ops_match_eager_bit_for_bit_and_move_the_generator(compiled_draws):
    compiled, rec = compiled_draws
    x, p = ember.randn(6, 7), ember.rand(6, 7)
    ember.manual_seed(11)
    got = [compiled(x, p) for _ in range(2)]
    got_offset = ember.default_generator.get_offset()
    ember.manual_seed(11)
    want = [draws(x, p) for _ in range(2)]
    assert ember.default_generator.get_offset() == got_offset > 0
    for g_call, w_call in zip(got, want, strict=True):
        for g, w in zip(g_call, w_call, strict=True):
            assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape)
            np.testing.assert_array_equal(_np(g), _np(w))
    # successive calls draw other numbers
    assert not np.array_equal(_np(got[0][0]), _np(got[1][0]))
    graph = rec.graphs[0]
    assert graph.fallbacks == []
    assert "ember_rand(" in graph.source and "ember_randint64(" in graph.source


def test_manual_seed_replays_a_compiled_program(compiled_draws):
    compiled, _ = compiled_draws
    x, p = ember.randn(6, 7), ember.rand(6, 7)
    ember.manual_seed(5)
    a = compiled(x, p)
    ember.manual_seed(5)
    b = compiled(x, p)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(_np(u), _np(v))


def _ks_uniform(u: np.ndarray) -> float:
    u = np.sort(u.ravel())
    n = u.size
    grid = np.arange(1, n + 1) / n
    return float(max(np.max(grid - u), np.max(u - (grid - 1 / n))))


def _ks_normal(z: np.ndarray) -> float:
    z = np.sort(z.ravel())
    n = z.size
    cdf = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    grid = np.arange(1, n + 1) / n
    return float(max(np.max(grid - cdf), np.max(cdf - (grid - 1 / n))))


def test_distributions_of_generated_draws():
    n = 20000
    compiled, rec = _compiled(lambda t: (ember.rand_like(t), ember.randn_like(t), ember.randint(3, 9, (n,))))
    ember.manual_seed(0)
    u, z, k = compiled(ember.empty(n))
    assert rec.graphs[0].fallbacks == []
    u, z, k = _np(u), _np(z), _np(k)
    # KS statistics: the 99.9% bound for n = 20000 is 1.95 / sqrt(n) ~ 0.0138
    bound = 1.95 / math.sqrt(n)
    assert u.min() >= 0 and u.max() < 1 and _ks_uniform(u) < bound
    assert _ks_normal(z) < bound and abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.05
    assert _ks_uniform(np.sqrt(u)) > 0.1  # the test rejects a wrong distribution
    assert set(np.unique(k)) == set(range(3, 9))
    counts = np.bincount(k - 3) / n
    assert np.all(np.abs(counts - 1 / 6) < 0.015)


def test_randn_is_eager_to_a_few_ulps():
    compiled, rec = _compiled(lambda: ember.randn(4000))
    ember.manual_seed(2)
    got = compiled()
    ember.manual_seed(2)
    want = ember.randn(4000)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-5)
    assert "ember_randn(" in rec.graphs[0].source


def test_dropout_backward_uses_the_forward_mask():
    x = ember.randn(8, 9, requires_grad=True)

    def fn(t):
        return (F.dropout(t, 0.5, training=True) * t).sum()

    compiled, rec = _compiled(fn)
    ember.manual_seed(4)
    compiled(x).backward()
    got = x.grad.clone()
    x.grad = None
    ember.manual_seed(4)
    fn(x).backward()
    np.testing.assert_allclose(_np(got), _np(x.grad), rtol=1e-6, atol=1e-6)
    # the gradient is zero exactly where the element was dropped: the backward saw the same mask
    assert 0 < (_np(got) == 0).sum() < got.numel()
    assert all(not g.fallbacks for g in rec.graphs)


def test_fallback_random_runs_eager_kernels_with_eager_numbers():
    config.fallback_random = True
    try:
        compiled, rec = _compiled(lambda t: (ember.randn_like(t), ember.rand(3)))
        ember.manual_seed(9)
        got = compiled(ember.empty(50))
    finally:
        config.fallback_random = False
    ember.manual_seed(9)
    want = (ember.randn(50), ember.rand(3))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(_np(g), _np(w))
    reasons = dict(rec.graphs[0].fallbacks)
    assert "fallback_random" in reasons["aten.randn_like.generator"]


def test_draws_eager_cannot_generate_run_at_the_right_counters():
    # float64 samples are eager's 53-bit numbers: an eager call at the graph's seed and offset
    def fn():
        return ember.rand(5, dtype=ember.float64), ember.rand(4)

    compiled, rec = _compiled(fn)
    ember.manual_seed(1)
    got = compiled()
    ember.manual_seed(1)
    want = fn()
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(_np(g), _np(w))
    assert [name for name, _ in rec.graphs[0].fallbacks] == ["aten.rand.generator"]


def test_compiled_with_ember_compile():
    f = ember.compile(lambda t: t + ember.rand_like(t))
    x = ember.zeros(3, 4)
    ember.manual_seed(0)
    a, b = f(x), f(x)
    ember.manual_seed(0)
    c, d = x + ember.rand_like(x), x + ember.rand_like(x)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    np.testing.assert_array_equal(b.numpy(), d.numpy())
