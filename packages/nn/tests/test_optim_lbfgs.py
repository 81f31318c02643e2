"""``LBFGS`` against PyTorch's: the same model, data and closure give the same parameters, losses
and evaluation counts, with and without the strong-Wolfe line search."""

from __future__ import annotations

import numpy as np
import pytest
from nn_harness import assert_close, copy_weights, needs_torch, torch

import ember
import ember.optim as eoptim

pytestmark = needs_torch


def _problem(seed: int):
    rng = np.random.default_rng(seed)
    # float64: over an LBFGS step's many inner iterations float32 rounding grows until it depends on
    # how each library's kernels split their sums (thread count, vector width).
    x = rng.standard_normal((16, 3))
    y = np.sin(x.sum(axis=1, keepdims=True))

    def build(nn):
        return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1)).double()

    theirs = build(torch.nn)
    ours = build(ember.nn)
    copy_weights(theirs, ours)
    return ours, theirs, (ember.tensor(x), ember.tensor(y)), (torch.from_numpy(x), torch.from_numpy(y))


def _closure(model, opt, data, functional):
    x, y = data

    def closure():
        opt.zero_grad()
        loss = functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    return closure


# (options, steps): the small network's loss surface amplifies rounding over many iterations, so each
# case stops while both sides still agree to the tolerance below; the iteration and evaluation counts
# must agree exactly.
CASES = [
    (dict(), 1),
    (dict(max_iter=10), 2),
    (dict(lr=0.5, max_iter=7, history_size=3), 3),
    (dict(line_search_fn="strong_wolfe"), 1),
    (dict(line_search_fn="strong_wolfe", max_iter=10), 3),
    (dict(line_search_fn="strong_wolfe", max_iter=10, history_size=4, max_eval=12), 2),
]


@pytest.mark.parametrize("kwargs,steps", CASES, ids=str)
def test_lbfgs_matches_torch(kwargs, steps):
    ours, theirs, ours_data, theirs_data = _problem(0)
    ours_opt = eoptim.LBFGS(ours.parameters(), **kwargs)
    theirs_opt = torch.optim.LBFGS(theirs.parameters(), **kwargs)
    ours_closure = _closure(ours, ours_opt, ours_data, ember.nn.functional)
    theirs_closure = _closure(theirs, theirs_opt, theirs_data, torch.nn.functional)
    for _ in range(steps):
        ours_loss = ours_opt.step(ours_closure)
        theirs_loss = theirs_opt.step(theirs_closure)
        np.testing.assert_allclose(float(ours_loss), theirs_loss.item(), rtol=1e-4, atol=1e-6)
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert_close(p, q, rtol=1e-3, atol=2e-4)
    mine = ours_opt.state[next(iter(ours.parameters()))]
    ref = theirs_opt.state[next(iter(theirs.parameters()))]
    assert sorted(mine) == sorted(ref)
    assert mine["n_iter"] == ref["n_iter"] and mine["func_evals"] == ref["func_evals"]
    assert ours_opt.state_dict()["param_groups"] == theirs_opt.state_dict()["param_groups"]


def test_lbfgs_errors_match_torch():
    p, q = ember.nn.Parameter(ember.ones(2)), torch.nn.Parameter(torch.ones(2))
    for build in [lambda m, x: m.LBFGS([x], lr=-1), lambda m, x: m.LBFGS([{"params": [x]}, {"params": []}])]:
        with pytest.raises(ValueError) as theirs:
            build(torch.optim, q)
        with pytest.raises(ValueError) as ours:
            build(eoptim, p)
        assert str(ours.value) == str(theirs.value)
    opt = eoptim.LBFGS([p], line_search_fn="armijo")
    p.grad = ember.ones(2)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: (p * p).sum())
