"""The small GPT and CNN of the training tests under ``ember.compile``: the same losses and gradients as eager."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from training_models import cnn, cnn_batch, gpt, gpt_batch

import ember
import ember.nn.functional as F


def _grads(model):
    return [p.grad.numpy() for p in model.parameters()]


@pytest.mark.parametrize("name", ["gpt", "cnn"])
def test_training_step_matches_eager(name):
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "gpt":
        model = gpt(ember, layers=1, width=32, context=16)
        x, y = (ember.tensor(a) for a in gpt_batch(rng, batch=2, context=16))

        def loss(m):
            return m(x, y)
    else:
        model = cnn(ember)
        x, y = (ember.tensor(a) for a in cnn_batch(rng, batch=2))

        def loss(m):
            return F.cross_entropy(m(x), y)

    twin = copy.deepcopy(model)
    compiled = ember.compile(twin, backend="inductor")
    want, got = loss(model), loss(compiled)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
    want.backward()
    got.backward()
    for a, b in zip(_grads(twin), _grads(model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
