"""Twenty AdamW steps of a small GPT and a small CNN in Ember and in PyTorch, from the same weights.

The losses must agree to 1e-4 relative at every step: the whole stack (layers, losses, autograd,
the optimizer) has to give PyTorch's numbers for that to hold twenty steps in.
"""

from __future__ import annotations

import numpy as np
import pytest
from training_models import cnn, cnn_batch, cnn_loss, copy_state, gpt, gpt_batch

import ember

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the test oracle) is not installed")
STEPS = 20


def _train(lib, model, batches, loss_of):
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    losses = []
    for x, y in batches:
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@needs_torch
def test_gpt_trains_as_in_pytorch():
    torch.manual_seed(0)
    theirs = gpt(torch, width=32, layers=2, context=16)
    ours = gpt(ember, width=32, layers=2, context=16)
    copy_state(theirs, ours, ember)
    rng = np.random.default_rng(0)
    data = [gpt_batch(rng, batch=4, context=16) for _ in range(STEPS)]
    theirs_losses = _train(
        torch, theirs, [(torch.tensor(x), torch.tensor(y)) for x, y in data], lambda m, x, y: m(x, y)
    )
    ours_losses = _train(ember, ours, [(ember.tensor(x), ember.tensor(y)) for x, y in data], lambda m, x, y: m(x, y))
    np.testing.assert_allclose(ours_losses, theirs_losses, rtol=1e-4)


@needs_torch
def test_cnn_trains_as_in_pytorch():
    torch.manual_seed(0)
    theirs, ours = cnn(torch), cnn(ember)
    copy_state(theirs, ours, ember)
    rng = np.random.default_rng(1)
    data = [cnn_batch(rng, batch=4) for _ in range(STEPS)]
    theirs_losses = _train(
        torch, theirs, [(torch.tensor(x), torch.tensor(y)) for x, y in data], lambda m, x, y: cnn_loss(torch, m, x, y)
    )
    ours_losses = _train(
        ember, ours, [(ember.tensor(x), ember.tensor(y)) for x, y in data], lambda m, x, y: cnn_loss(ember, m, x, y)
    )
    np.testing.assert_allclose(ours_losses, theirs_losses, rtol=1e-4)
