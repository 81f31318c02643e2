"""Transforms, biject_to/transform_to and TransformedDistribution against PyTorch's, in float64."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as D
from ember.distributions import constraints
from ember.distributions import transforms as T

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
TT = torch.distributions.transforms
TC = torch.distributions.constraints

rng = np.random.default_rng(1)


def _close(ours, theirs, what=""):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-9, err_msg=what)


def _pair(x):
    return ember.tensor(x, dtype=ember.float64), torch.tensor(x, dtype=torch.float64)


SCALE = rng.uniform(0.5, 2.0, size=(3,))
TRANSFORMS = [
    ("ExpTransform", (), rng.normal(size=(4, 3))),
    ("SigmoidTransform", (), rng.normal(size=(4, 3))),
    ("TanhTransform", (), rng.normal(size=(4, 3))),
    ("SoftplusTransform", (), rng.normal(size=(4, 3))),
    ("AffineTransform", (0.5, SCALE), rng.normal(size=(4, 3))),
    ("AffineTransform", (0.5, -2.0), rng.normal(size=(4, 3))),
    ("PowerTransform", (2.5,), rng.uniform(0.5, 2, size=(4, 3))),
    ("StickBreakingTransform", (), rng.normal(size=(4, 3))),
    ("LowerCholeskyTransform", (), rng.normal(size=(2, 3, 3))),
    ("CorrCholeskyTransform", (), rng.normal(size=(2, 6))),
]


def _make(module, name, args, tensor):
    args = tuple(tensor(a) if isinstance(a, np.ndarray) else a for a in args)
    return getattr(module, name)(*args)


@pytest.mark.parametrize("name,args,x", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transform_against_torch(name, args, x):
    ours = _make(T, name, args, lambda a: ember.tensor(a, dtype=ember.float64))
    theirs = _make(TT, name, args, lambda a: torch.tensor(a, dtype=torch.float64))
    ex, tx = _pair(x)
    ey, ty = ours(ex), theirs(tx)
    _close(ey, ty, "forward")
    _close(ours.inv(ey), theirs.inv(ty), "inverse")
    if name not in ("LowerCholeskyTransform",):
        _close(ours.log_abs_det_jacobian(ex, ey), theirs.log_abs_det_jacobian(tx, ty), "log|det J|")
    assert ours.bijective == theirs.bijective
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert tuple(ours.forward_shape(ex.shape)) == tuple(theirs.forward_shape(tx.shape))


def test_compose_independent_reshape_cat_stack():
    x = rng.normal(size=(2, 6))
    ex, tx = _pair(x)
    ours = T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform()])
    theirs = TT.ComposeTransform([TT.AffineTransform(1.0, 2.0), TT.ExpTransform()])
    _close(ours(ex), theirs(tx))
    _close(ours.log_abs_det_jacobian(ex, ours(ex)), theirs.log_abs_det_jacobian(tx, theirs(tx)))
    _close(ours.inv(ours(ex)), tx)
    ind = T.IndependentTransform(T.ExpTransform(), 1)
    tind = TT.IndependentTransform(TT.ExpTransform(), 1)
    _close(ind.log_abs_det_jacobian(ex, ind(ex)), tind.log_abs_det_jacobian(tx, tind(tx)))
    r, tr = T.ReshapeTransform((6,), (2, 3)), TT.ReshapeTransform((6,), (2, 3))
    assert tuple(r(ex).shape) == tuple(tr(tx).shape)
    _close(r.log_abs_det_jacobian(ex, r(ex)), tr.log_abs_det_jacobian(tx, tr(tx)))
    cat = T.CatTransform([T.ExpTransform(), T.identity_transform], dim=1, lengths=[2, 4])
    tcat = TT.CatTransform([TT.ExpTransform(), TT.identity_transform], dim=1, lengths=[2, 4])
    _close(cat(ex), tcat(tx))
    _close(cat.inv(cat(ex)), tx)
    _close(cat.log_abs_det_jacobian(ex, cat(ex)), tcat.log_abs_det_jacobian(tx, tcat(tx)))
    y3 = rng.normal(size=(3, 2))
    e3, t3 = _pair(y3)
    st = T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=1)
    tst = TT.StackTransform([TT.ExpTransform(), TT.SigmoidTransform()], dim=1)
    _close(st(e3), tst(t3))
    _close(st.log_abs_det_jacobian(e3, st(e3)), tst.log_abs_det_jacobian(t3, tst(t3)))


def test_abs_and_softmax_transforms():
    x = rng.normal(size=(3, 4))
    ex, tx = _pair(x)
    _close(T.AbsTransform()(ex), TT.AbsTransform()(tx))
    _close(T.SoftmaxTransform()(ex), TT.SoftmaxTransform()(tx))


def test_cumulative_distribution_transform():
    x = rng.normal(size=(5,))
    ex, tx = _pair(x)
    ours = T.CumulativeDistributionTransform(D.Normal(0.0, 2.0))
    theirs = TT.CumulativeDistributionTransform(torch.distributions.Normal(0.0, 2.0))
    _close(ours(ex), theirs(tx))
    _close(ours.log_abs_det_jacobian(ex, ours(ex)), theirs.log_abs_det_jacobian(tx, theirs(tx)))
    _close(ours.inv(ours(ex)), tx)


CONSTRAINTS = [
    ("real", (4,)), ("positive", (4,)), ("nonnegative", (4,)), ("unit_interval", (4,)), ("simplex", (3,)),
    ("lower_cholesky", (3, 3)), ("corr_cholesky", (3,)), ("real_vector", (4,)),
]  # fmt: skip


@pytest.mark.parametrize("name,shape", CONSTRAINTS)
def test_biject_to_and_transform_to_match_torch(name, shape):
    oc, tc = getattr(constraints, name), getattr(TC, name)
    for ours_reg, theirs_reg in (
        (D.biject_to, torch.distributions.biject_to),
        (D.transform_to, torch.distributions.transform_to),
    ):
        try:
            theirs = theirs_reg(tc)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                ours_reg(oc)
            continue
        ours = ours_reg(oc)
        x = rng.normal(size=(2,) + shape)
        ex, tx = _pair(x)
        ey, ty = ours(ex), theirs(tx)
        _close(ey, ty, f"{name} forward")
        assert bool(oc.check(ey).all())
        try:
            expected = theirs.log_abs_det_jacobian(tx, ty)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                ours.log_abs_det_jacobian(ex, ey)
            continue
        _close(ours.log_abs_det_jacobian(ex, ey), expected, f"{name} log|det J|")


def test_interval_and_greater_than_registry():
    for oc, tc in (
        (constraints.interval(-1.0, 3.0), TC.interval(-1.0, 3.0)),
        (constraints.greater_than(2.0), TC.greater_than(2.0)),
        (constraints.less_than(2.0), TC.less_than(2.0)),
    ):
        x = rng.normal(size=(5,))
        ex, tx = _pair(x)
        _close(D.biject_to(oc)(ex), torch.distributions.biject_to(tc)(tx))


def test_transformed_distribution_matches_torch():
    loc, scale = rng.normal(size=3), rng.uniform(0.5, 2, size=3)
    base = D.Normal(ember.tensor(loc), ember.tensor(scale))
    tbase = torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale))
    ours = D.TransformedDistribution(base, [T.AffineTransform(1.0, -2.0), T.SigmoidTransform()])
    theirs = torch.distributions.TransformedDistribution(tbase, [TT.AffineTransform(1.0, -2.0), TT.SigmoidTransform()])
    v = rng.uniform(0.1, 0.9, size=(4, 3))
    ev, tv = _pair(v)
    _close(ours.log_prob(ev), theirs.log_prob(tv))
    _close(ours.cdf(ev), theirs.cdf(tv))
    _close(ours.icdf(ev), theirs.icdf(tv))
    ind = D.Independent(base, 1)
    tind = torch.distributions.Independent(tbase, 1)
    assert tuple(ind.event_shape) == tuple(tind.event_shape) == (3,)
    w = rng.normal(size=(2, 3))
    ew, tw = _pair(w)
    _close(ind.log_prob(ew), tind.log_prob(tw))
    _close(ind.entropy(), tind.entropy())
