"""MultivariateNormal and LowRankMultivariateNormal against PyTorch's, in float64."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as D

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
TD = torch.distributions
rng = np.random.default_rng(2)


def _close(ours, theirs, what=""):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-9, err_msg=what)


def _spd(*batch, n=3):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_against_torch(kind):
    loc = rng.normal(size=(2, 3))
    m = _spd(2)
    if kind == "scale_tril":
        m = np.linalg.cholesky(m)
    e = D.MultivariateNormal(ember.tensor(loc), **{kind: ember.tensor(m)})
    t = TD.MultivariateNormal(torch.tensor(loc), **{kind: torch.tensor(m)})
    x = rng.normal(size=(4, 2, 3))
    _close(e.log_prob(ember.tensor(x)), t.log_prob(torch.tensor(x)), "log_prob")
    _close(e.entropy(), t.entropy(), "entropy")
    for attr in ("mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        _close(getattr(e, attr), getattr(t, attr), attr)
    assert tuple(e.batch_shape) == (2,) and tuple(e.event_shape) == (3,)
    assert tuple(e.expand((5, 2)).sample((7,)).shape) == (7, 5, 2, 3)


def test_mvn_kl_and_gradients_against_torch():
    loc1, loc2 = rng.normal(size=3), rng.normal(size=(2, 3))
    c1, c2 = _spd(), _spd(2)
    el = ember.tensor(loc1, requires_grad=True)
    ec = ember.tensor(c1, requires_grad=True)
    tl = torch.tensor(loc1, requires_grad=True)
    tc = torch.tensor(c1, requires_grad=True)
    ep, tp = D.MultivariateNormal(el, ec), TD.MultivariateNormal(tl, tc)
    eq, tq = (
        D.MultivariateNormal(ember.tensor(loc2), ember.tensor(c2)),
        TD.MultivariateNormal(torch.tensor(loc2), torch.tensor(c2)),
    )
    ekl, tkl = D.kl_divergence(ep, eq), TD.kl_divergence(tp, tq)
    _close(ekl, tkl, "kl")
    x = rng.normal(size=(4, 3))
    (ekl.sum() + ep.log_prob(ember.tensor(x)).sum()).backward()
    (tkl.sum() + tp.log_prob(torch.tensor(x)).sum()).backward()
    _close(el.grad, tl.grad, "d/dloc")
    # PyTorch's gradient with respect to a symmetric matrix is not symmetrized; compare the symmetric parts
    _close(ec.grad + ec.grad.mT, tc.grad + tc.grad.mT, "d/dcov")


def test_mvn_rsample_is_loc_plus_l_eps():
    loc, m = rng.normal(size=3), np.linalg.cholesky(_spd())
    d = D.MultivariateNormal(ember.tensor(loc), scale_tril=ember.tensor(m))
    ember.manual_seed(5)
    x = d.rsample((4,))
    ember.manual_seed(5)
    eps = ember.randn((4, 3), dtype=ember.float64)
    _close(x, torch.tensor(loc) + torch.tensor(eps.numpy()) @ torch.tensor(m).T)


def test_mvn_errors_match_torch():
    for kwargs in ({}, {"covariance_matrix": np.eye(2), "scale_tril": np.eye(2)}):
        with pytest.raises(ValueError):
            D.MultivariateNormal(ember.zeros(2, dtype=ember.float64), **{k: ember.tensor(v) for k, v in kwargs.items()})
        with pytest.raises(ValueError):
            TD.MultivariateNormal(
                torch.zeros(2, dtype=torch.float64), **{k: torch.tensor(v) for k, v in kwargs.items()}
            )
    with pytest.raises(ValueError, match="to satisfy the constraint"):
        D.MultivariateNormal(
            ember.zeros(2, dtype=ember.float64), covariance_matrix=ember.tensor([[1.0, 2.0], [2.0, 1.0]])
        )


def test_lowrank_mvn_against_torch():
    loc = rng.normal(size=(2, 4))
    w = rng.normal(size=(2, 4, 2))
    dg = rng.uniform(0.5, 2, size=(2, 4))
    e = D.LowRankMultivariateNormal(ember.tensor(loc), ember.tensor(w), ember.tensor(dg))
    t = TD.LowRankMultivariateNormal(torch.tensor(loc), torch.tensor(w), torch.tensor(dg))
    x = rng.normal(size=(3, 2, 4))
    _close(e.log_prob(ember.tensor(x)), t.log_prob(torch.tensor(x)))
    _close(e.entropy(), t.entropy())
    _close(e.variance, t.variance)
    _close(e.covariance_matrix, t.covariance_matrix)
    ember.manual_seed(0)
    s = e.sample((20000,))
    err = (s.mean(0) - e.mean).abs()
    assert bool((err <= 6 * (e.variance / 20000).sqrt()).all())


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_against_torch(kind):
    m = _spd(2)
    if kind == "scale_tril":
        m = np.linalg.cholesky(m)
    df = np.array([4.5, 6.0])
    e = D.Wishart(ember.tensor(df), **{kind: ember.tensor(m)})
    t = TD.Wishart(torch.tensor(df), **{kind: torch.tensor(m)})
    x = _spd(3, 2) / 3
    _close(e.log_prob(ember.tensor(x)), t.log_prob(torch.tensor(x)), "log_prob")
    _close(e.entropy(), t.entropy(), "entropy")
    for attr in ("mean", "mode", "variance", "covariance_matrix", "precision_matrix"):
        _close(getattr(e, attr), getattr(t, attr), attr)
    ember.manual_seed(4)
    n = 4000
    s = e.sample((n,))
    assert tuple(s.shape) == (n, 2, 3, 3)
    err = (s.mean(0) - e.mean).abs()
    assert bool((err <= 6 * (e.variance / n).sqrt()).all())


def test_lkj_cholesky_against_torch():
    conc = np.array([0.5, 2.0])
    e, t = D.LKJCholesky(3, ember.tensor(conc)), TD.LKJCholesky(3, torch.tensor(conc))
    ember.manual_seed(1)
    x = e.sample((5,))
    assert bool(D.constraints.corr_cholesky.check(x).all())
    _close(e.log_prob(x), t.log_prob(torch.tensor(x.numpy())), "log_prob")
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        D.LKJCholesky(1)


def test_lowrank_kl_pairs_against_torch():
    loc = rng.normal(size=(2, 3))
    w, dg = rng.normal(size=(2, 3, 2)), rng.uniform(0.5, 2, size=(2, 3))
    c = _spd(2)
    e_lr = D.LowRankMultivariateNormal(ember.tensor(loc), ember.tensor(w), ember.tensor(dg))
    t_lr = TD.LowRankMultivariateNormal(torch.tensor(loc), torch.tensor(w), torch.tensor(dg))
    e_mvn = D.MultivariateNormal(ember.tensor(loc[::-1].copy()), ember.tensor(c))
    t_mvn = TD.MultivariateNormal(torch.tensor(loc[::-1].copy()), torch.tensor(c))
    for (a, ta), (b, tb) in (
        ((e_lr, t_lr), (e_mvn, t_mvn)),
        ((e_mvn, t_mvn), (e_lr, t_lr)),
        ((e_lr, t_lr), (e_lr, t_lr)),
    ):
        _close(D.kl_divergence(a, b), TD.kl_divergence(ta, tb))


def test_exponential_family_bregman_entropy_matches_closed_forms():
    # the generic entropy from the log-normalizer equals each family's own closed form
    cases = [
        D.Normal(ember.tensor(rng.normal(size=3)), ember.tensor(rng.uniform(0.5, 2, size=3))),
        D.Gamma(ember.tensor(rng.uniform(0.5, 3, size=3)), ember.tensor(rng.uniform(0.5, 3, size=3))),
        D.Exponential(ember.tensor(rng.uniform(0.5, 3, size=3))),
        D.Bernoulli(probs=ember.tensor(rng.uniform(0.1, 0.9, size=3))),
    ]
    for d in cases:
        generic = D.ExponentialFamily.entropy(d)
        np.testing.assert_allclose(generic.detach().numpy(), d.entropy().numpy(), rtol=1e-6, atol=1e-9)


def test_bregman_kl_matches_closed_forms():
    from ember.distributions.kl import _kl_expfamily_expfamily

    pairs = [
        (
            D.Normal(ember.tensor([0.3, -1.0]), ember.tensor([1.2, 0.7])),
            D.Normal(ember.tensor([1.0, 0.0]), ember.tensor([0.5, 2.0])),
        ),
        (
            D.Gamma(ember.tensor([2.0, 0.7]), ember.tensor([1.5, 3.0])),
            D.Gamma(ember.tensor([1.0, 2.0]), ember.tensor([0.5, 1.0])),
        ),
        (
            D.Beta(ember.tensor([2.0, 0.7]), ember.tensor([1.5, 3.0])),
            D.Beta(ember.tensor([1.0, 2.0]), ember.tensor([0.5, 1.0])),
        ),
    ]
    for p, q in pairs:
        np.testing.assert_allclose(
            _kl_expfamily_expfamily(p, q).detach().numpy(), D.kl_divergence(p, q).numpy(), rtol=1e-6, atol=1e-9
        )
    with pytest.raises(NotImplementedError):
        _kl_expfamily_expfamily(pairs[0][0], pairs[1][0])
