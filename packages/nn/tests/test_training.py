"""End to end: a model whose ops all have derivatives today, trained for a few steps with autograd
and each optimizer, lands on PyTorch's parameters; a scheduler and gradient clipping ride along."""

from __future__ import annotations

import numpy as np
import pytest
from nn_harness import assert_close, copy_weights, needs_torch, torch

import ember
import ember.nn as enn


def _model(lib):
    nn = lib.nn

    class Gate(nn.Module):
        """Elementwise: y = rmsnorm(silu(x * w + b)) * tanh(x) (mul, add, silu, tanh and rms_norm record)."""

        def __init__(self, features):
            super().__init__()
            self.w = nn.Parameter(lib.ones(features) * 0.5)
            self.b = nn.Parameter(lib.zeros(features))
            self.norm = nn.RMSNorm(features)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.norm(self.act(x * self.w + self.b)) * x.tanh()

    return Gate(6)


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
        ("Adam", dict(lr=0.05, amsgrad=True)),
        ("AdamW", dict(lr=0.05, foreach=True)),
        ("RMSprop", dict(lr=0.01, centered=True)),
        ("Adagrad", dict(lr=0.1, foreach=True)),
    ],
)
def test_training_steps_match_torch(name, kwargs):
    rng = np.random.default_rng(0)
    theirs, ours = _model(torch), _model(ember)
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(torch.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)) * 0.1)
    copy_weights(theirs, ours)
    t_opt = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    e_opt = getattr(ember.optim, name)(ours.parameters(), **kwargs)
    t_sched = torch.optim.lr_scheduler.StepLR(t_opt, step_size=2, gamma=0.5)
    e_sched = ember.optim.lr_scheduler.StepLR(e_opt, step_size=2, gamma=0.5)
    for _ in range(4):
        x = rng.standard_normal((5, 6)).astype(np.float32)
        y = rng.standard_normal((5, 6)).astype(np.float32)
        t_loss = torch.nn.functional.mse_loss(theirs(torch.from_numpy(x)), torch.from_numpy(y))
        e_loss = enn.functional.mse_loss(ours(ember.tensor(x)), ember.tensor(y))
        assert_close(e_loss, t_loss, rtol=1e-5)
        t_opt.zero_grad()
        e_opt.zero_grad()
        t_loss.backward()
        e_loss.backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5)
        enn.utils.clip_grad_norm_(ours.parameters(), 0.5)
        t_opt.step()
        e_opt.step()
        t_sched.step()
        e_sched.step()
    for (key, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert_close(p, q, rtol=1e-4, atol=1e-5), key
