"""Samples drawn with Ember's generator: shapes, support, reproducibility under ember.manual_seed, and
moments. Each sample mean is checked against the distribution's mean within 6 standard errors
(computed from the distribution's variance and the sample size), so a correct sampler fails with
probability below 1e-8 per check and the seed is fixed besides."""

from __future__ import annotations

import math

import pytest

import ember
import ember.distributions as D

N = 20000


def t(*values):
    return ember.tensor(list(values), dtype=ember.float64)


CASES = [
    lambda: D.Normal(t(0.0, 2.0), t(1.0, 0.5)),
    lambda: D.Uniform(t(-1.0, 2.0), t(1.0, 5.0)),
    lambda: D.Exponential(t(0.5, 3.0)),
    lambda: D.Laplace(t(0.0, 1.0), t(1.0, 2.0)),
    lambda: D.Gumbel(t(0.0, 1.0), t(1.0, 2.0)),
    lambda: D.LogNormal(t(0.0, 0.5), t(0.3, 0.2)),
    lambda: D.HalfNormal(t(1.0, 2.0)),
    lambda: D.Gamma(t(0.3, 2.0, 9.0), t(1.0, 0.5, 3.0)),
    lambda: D.Chi2(t(1.0, 5.0)),
    lambda: D.Beta(t(0.5, 2.0), t(0.7, 5.0)),
    lambda: D.Dirichlet(t(0.5, 2.0, 3.0)),
    lambda: D.StudentT(t(5.0, 9.0), t(0.0, 1.0), t(1.0, 2.0)),
    lambda: D.Bernoulli(probs=t(0.2, 0.9)),
    lambda: D.Geometric(probs=t(0.3, 0.8)),
    lambda: D.Poisson(t(0.5, 4.0, 30.0, 400.0)),
    lambda: D.Binomial(10, probs=t(0.2, 0.7)),
    lambda: D.Binomial(t(3.0, 700.0, 1000.0, 40.0), probs=t(0.5, 0.1, 0.93, 0.6)),
    lambda: D.Categorical(probs=t(0.2, 0.3, 0.5)),
    lambda: D.OneHotCategorical(probs=t(0.2, 0.3, 0.5)),
    lambda: D.Multinomial(5, probs=t(0.2, 0.3, 0.5)),
    lambda: D.Pareto(t(1.0, 2.0), t(5.0, 7.0)),
    lambda: D.Weibull(t(1.0, 2.0), t(0.8, 3.0)),
    lambda: D.Kumaraswamy(t(0.5, 2.0), t(1.5, 3.0)),
    lambda: D.InverseGamma(t(5.0, 9.0), t(1.0, 2.0)),
    lambda: D.FisherSnedecor(t(4.0, 10.0), t(12.0, 20.0)),
    lambda: D.NegativeBinomial(t(3.0, 10.0), probs=t(0.3, 0.6)),
    lambda: D.ContinuousBernoulli(probs=t(0.2, 0.5, 0.8)),
    lambda: D.GeneralizedPareto(t(0.0, 1.0), t(1.0, 2.0), t(0.1, -0.2)),
]


def _categorical_moments(d):
    k = d.probs.shape[-1]
    values = ember.arange(k, dtype=ember.float64)
    mean = (d.probs * values).sum(-1)
    var = (d.probs * values**2).sum(-1) - mean**2
    return mean, var


@pytest.mark.parametrize("make", CASES, ids=[str(i) for i in range(len(CASES))])
def test_sample_moments(make):
    d = make()
    ember.manual_seed(1234)
    x = d.sample((N,))
    assert tuple(x.shape) == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert bool(d.support.check(x).all())
    ember.manual_seed(1234)
    assert bool((d.sample((N,)) == x).all()), "ember.manual_seed makes sampling reproducible"
    if isinstance(d, D.Categorical):
        mean, var = _categorical_moments(d)
    else:
        mean, var = d.mean, d.variance
    x = x.to(ember.float64)
    tol = 6 * (var / N).sqrt()
    err = (x.mean(0) - mean).abs()
    assert bool((err <= tol).all()), f"sample mean {x.mean(0)} vs {mean} (tolerance {tol})"
    # the variance too, within a generous bound (its standard error needs the fourth moment)
    ratio = x.var(0) / var
    assert bool(((ratio - 1).abs() < 0.15).all()), f"sample variance ratio {ratio}"


def test_cauchy_and_half_cauchy_median():
    ember.manual_seed(0)
    x = D.Cauchy(t(1.0), t(2.0)).sample((N,))
    q = (x <= 1.0).to(ember.float64).mean()
    assert abs(q.item() - 0.5) < 6 * math.sqrt(0.25 / N)
    y = D.HalfCauchy(t(2.0)).sample((N,))
    assert bool((y >= 0).all())
    assert abs((y <= 2.0).to(ember.float64).mean().item() - 0.5) < 6 * math.sqrt(0.25 / N)


def test_rsample_keeps_the_graph():
    loc = t(0.0, 1.0).requires_grad_()
    scale = t(1.0, 2.0).requires_grad_()
    for d in (D.Normal(loc, scale), D.Laplace(loc, scale), D.Gumbel(loc, scale), D.Cauchy(loc, scale)):
        x = d.rsample((3,))
        assert x.requires_grad
        assert not d.sample((3,)).requires_grad


def test_gamma_rsample_gradient_is_the_implicit_reparameterization():
    # E[x] = a / b, so d/da of the sample mean tends to 1 / b; the gradient of each draw is exact, the mean is statistical
    a = t(2.5).requires_grad_()
    ember.manual_seed(7)
    x = D.Gamma(a, t(2.0)).rsample((4000,))
    x.mean().backward()
    assert abs(a.grad.item() - 0.5) < 0.05
    c = t(1.5, 2.5, 4.0).requires_grad_()
    y = D.Dirichlet(c).rsample((2000,))
    assert y.requires_grad
    (y[:, 0]).mean().backward()
    # d E[y0] / d c0 = (c1 + c2) / (sum c)^2
    assert abs(c.grad[0].item() - 6.5 / 64) < 0.02


def test_default_validate_args_switch():
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_sample_shapes_and_expand():
    d = D.Normal(ember.zeros(2, 3), ember.ones(2, 3))
    assert tuple(d.sample().shape) == (2, 3)
    assert tuple(d.sample((4, 5)).shape) == (4, 5, 2, 3)
    e = d.expand((7, 2, 3))
    assert tuple(e.batch_shape) == (7, 2, 3)
    assert tuple(e.sample((1,)).shape) == (1, 7, 2, 3)
    ind = D.Independent(d, 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    with pytest.raises(ValueError):
        D.Independent(d, 3)


def test_von_mises_circular_moments():
    d = D.VonMises(t(0.5, -2.0), t(0.3, 4.0))
    ember.manual_seed(11)
    x = d.sample((N,))
    assert bool(((x >= -math.pi) & (x <= math.pi)).all())
    # E[cos(x - loc)] = 1 - circular variance; each cos has variance at most 1
    mean_cos = ember.cos(x - d.loc).mean(0)
    assert bool(((mean_cos - (1 - d.variance)).abs() <= 6 / math.sqrt(N)).all())


def test_relaxed_samples_and_mixture():
    ember.manual_seed(2)
    rb = D.RelaxedBernoulli(t(0.5), probs=t(0.3, 0.7))
    x = rb.rsample((1000,))
    assert bool(((x > 0) & (x < 1)).all())
    rc = D.RelaxedOneHotCategorical(t(0.5), probs=t(0.2, 0.3, 0.5))
    y = rc.rsample((1000,))
    assert bool(((y.sum(-1) - 1).abs() < 1e-9).all())
    mix = D.MixtureSameFamily(D.Categorical(probs=t(0.3, 0.7)), D.Normal(t(-2.0, 3.0), t(0.5, 1.0)))
    z = mix.sample((N,))
    assert tuple(z.shape) == (N,)
    assert abs(z.mean().item() - mix.mean.item()) <= 6 * math.sqrt(mix.variance.item() / N)
    ln = D.LogisticNormal(t(0.0, 1.0), t(1.0, 0.5))
    w = ln.sample((100,))
    assert tuple(w.shape) == (100, 3) and bool(((w.sum(-1) - 1).abs() < 1e-9).all())


@pytest.mark.parametrize(
    "make",
    [
        lambda: D.Binomial(t(40.0), probs=t(0.6)),  # rejection sampler (BTRS)
        lambda: D.Binomial(t(12.0), probs=t(0.3)),  # inversion
        lambda: D.Poisson(t(30.0)),  # rejection sampler (PTRS)
        lambda: D.Poisson(t(3.5)),  # multiplication method
    ],
    ids=["binomial-btrs", "binomial-inversion", "poisson-ptrs", "poisson-small"],
)
def test_discrete_sampler_frequencies_match_the_pmf(make):
    d = make()
    ember.manual_seed(99)
    x = d.sample((N,)).reshape(-1)
    ks = ember.arange(0, int(x.max().item()) + 1, dtype=ember.float64)
    pmf = d.log_prob(ks.unsqueeze(-1)).exp().reshape(-1)
    freq = (x.unsqueeze(-1) == ks).to(ember.float64).mean(0)
    tol = 6 * (pmf * (1 - pmf) / N).sqrt() + 1e-4
    assert bool(((freq - pmf).abs() <= tol).all())


def test_reachable_from_the_top_level():
    assert ember.distributions is D
    assert ember.distributions.normal.Normal is D.Normal
    assert ember.distributions.studentT.StudentT is D.StudentT


def _every_distribution():
    f = ember.tensor
    return [
        D.Normal(0.0, 1.0), D.Uniform(0.0, 2.0), D.Exponential(2.0), D.Laplace(0.0, 1.0), D.Cauchy(0.0, 1.0),
        D.Gumbel(0.0, 1.0), D.LogNormal(0.0, 1.0), D.HalfNormal(1.0), D.HalfCauchy(1.0), D.Gamma(2.0, 1.0),
        D.Chi2(3.0), D.Beta(2.0, 3.0), D.Dirichlet(f([1.0, 2.0])), D.StudentT(3.0), D.Bernoulli(0.3),
        D.Geometric(0.3), D.Poisson(3.0), D.Binomial(5, f([0.3])), D.Categorical(f([0.2, 0.8])),
        D.OneHotCategorical(f([0.2, 0.8])), D.Multinomial(4, f([0.2, 0.8])), D.Pareto(1.0, 2.0),
        D.Weibull(1.0, 2.0), D.Kumaraswamy(2.0, 3.0), D.InverseGamma(3.0, 1.0), D.GeneralizedPareto(0.0, 1.0, 0.2),
        D.FisherSnedecor(3.0, 5.0), D.NegativeBinomial(3.0, 0.4), D.RelaxedBernoulli(f(0.5), 0.3),
        D.RelaxedOneHotCategorical(f(0.5), f([0.2, 0.8])), D.LogisticNormal(f([0.0, 1.0]), f([1.0, 1.0])),
        D.VonMises(0.0, 1.0), D.ContinuousBernoulli(0.3), D.MultivariateNormal(ember.zeros(2), ember.eye(2)),
        D.LowRankMultivariateNormal(ember.zeros(2), ember.ones(2, 1), ember.ones(2)), D.Wishart(3.0, ember.eye(2)),
        D.LKJCholesky(3, 1.0), D.MixtureSameFamily(D.Categorical(f([0.5, 0.5])), D.Normal(f([0.0, 1.0]), f([1.0, 1.0]))),
    ]  # fmt: skip


def test_every_distribution_samples_and_scores_in_the_default_dtype():
    ember.manual_seed(0)
    for d in _every_distribution():
        x = d.sample((3,))
        assert tuple(x.shape) == (3,) + tuple(d.batch_shape) + tuple(d.event_shape), type(d).__name__
        lp = d.log_prob(x)
        assert tuple(lp.shape) == (3,) + tuple(d.batch_shape), type(d).__name__
        assert lp.dtype == ember.float32, type(d).__name__
        assert bool(ember.isfinite(lp).all()), type(d).__name__
        if d.has_rsample:
            assert tuple(d.rsample((2,)).shape) == (2,) + tuple(d.batch_shape) + tuple(d.event_shape)
