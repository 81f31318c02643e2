"""Compiled optimizer steps against PyTorch's optimizers (the oracle): 20 steps, the same parameters."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

SHAPES = [(8, 6), (6,), (4, 3, 2)]
STEPS = 20

CONFIGS = {
    "SGD": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    "Adam": dict(lr=0.01, amsgrad=True, weight_decay=0.1),
    "AdamW": dict(lr=0.01),
}


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_compiled_steps_match_pytorch(name, foreach):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype("float32") for s in SHAPES]
    grads = [[rng.standard_normal(s).astype("float32") for s in SHAPES] for _ in range(STEPS)]
    ours = [nn.Parameter(ember.tensor(a)) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    our_opt = getattr(ember.optim, name)(ours, foreach=foreach, **CONFIGS[name])
    their_opt = getattr(torch.optim, name)(theirs, foreach=foreach, **CONFIGS[name])
    step = ember.compile(our_opt.step)
    for gs in grads:
        for p, q, g in zip(ours, theirs, gs, strict=True):
            p.grad, q.grad = ember.tensor(g), torch.tensor(g)
        step()
        their_opt.step()
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-5)
    for p, q in zip(ours, theirs, strict=True):
        for key, value in their_opt.state[q].items():
            got = our_opt.state[p][key]
            np.testing.assert_allclose(got.detach().numpy(), value.detach().numpy(), rtol=1e-5, atol=1e-5)
