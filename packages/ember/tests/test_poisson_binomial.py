"""``ember.poisson`` and ``ember.binomial``: the moments of many draws, reproducibility under
``manual_seed``, PyTorch's errors, and a zero gradient through the draw. The draws come from Ember's
generator, so they are compared with the distributions, not with PyTorch's numbers."""

from __future__ import annotations

import math

import pytest

import ember

N = 40_000


@pytest.mark.parametrize("rate", [0.3, 3.5, 40.0])
def test_poisson_moments(rate):
    ember.manual_seed(1)
    draw = ember.poisson(ember.full((N,), rate))
    assert draw.dtype == ember.float32 and bool((draw == draw.round()).all()) and bool((draw >= 0).all())
    sd = math.sqrt(rate / N)  # the mean's standard error; 5 of them fail a wrong sampler, not a right one
    assert abs(float(draw.mean()) - rate) < 5 * sd
    assert abs(float(draw.double().var()) - rate) < 0.05 * rate + 5 * sd


@pytest.mark.parametrize(("n", "p"), [(10.0, 0.3), (200.0, 0.7), (5.0, 0.0), (5.0, 1.0)])
def test_binomial_moments(n, p):
    ember.manual_seed(2)
    draw = ember.binomial(ember.full((N,), n, dtype=ember.float64), ember.full((N,), p, dtype=ember.float64))
    assert draw.dtype == ember.float64 and bool(((draw >= 0) & (draw <= n)).all())
    mean, var = n * p, n * p * (1 - p)
    assert abs(float(draw.mean()) - mean) < 5 * math.sqrt(var / N) + 1e-12
    assert abs(float(draw.var()) - var) < 0.05 * var + 1e-12


def test_same_seed_same_draws():
    rates = ember.full((100,), 4.0)
    ember.manual_seed(3)
    first = ember.poisson(rates)
    ember.manual_seed(3)
    assert ember.equal(first, ember.poisson(rates))


def test_errors_and_gradient_as_pytorch():
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        ember.poisson(ember.tensor([-1.0]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.poisson(ember.tensor([1]))
    rate = ember.tensor([2.0, 5.0], requires_grad=True)
    out = ember.poisson(rate)
    assert out.requires_grad
    out.sum().backward()
    assert rate.grad.tolist() == [0.0, 0.0]
