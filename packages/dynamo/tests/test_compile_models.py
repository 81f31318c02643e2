"""Real models through ``ember.compile``: the GPT and the CNN of the training benchmark train with
the same losses compiled as eager, with the ``eager`` and ``aot_eager`` backends (the latter runs the
forward and backward graphs AOT autograd builds), and a 4-layer GPT takes 20 AdamW steps compiled
with ``aot_eager`` with eager's losses."""

from __future__ import annotations

import numpy as np
import pytest
from training_models import cnn, cnn_batch, cnn_loss, gpt, gpt_batch

import ember

# Compiled and eager run the same ops; AOT autograd's graphs may order a reduction differently.
RTOL, ATOL = 1e-4, 1e-5


def _gpt(layers: int, width: int):
    ember.manual_seed(0)
    return gpt(ember, layers=layers, width=width, context=16)


def _gpt_loss(model, x, y):
    return model(x, y)


def _cnn_loss(model, x, y):
    return cnn_loss(ember, model, x, y)


def _batches(kind: str, steps: int, batch: int):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        if kind == "gpt":
            x, y = gpt_batch(rng, batch=batch, context=16)
        else:
            x, y = cnn_batch(rng, batch=batch)
        out.append((ember.tensor(x), ember.tensor(y)))
    return out


def _train(model, loss_of, batches, backend: str | None) -> list[float]:
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    run = model if backend is None else ember.compile(model, backend=backend)
    losses = []
    for x, y in batches:
        loss = loss_of(run, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _twins(build):
    """Two copies of one model with the same weights and buffers."""
    first = build()
    second = build()
    second.load_state_dict(first.state_dict())
    return first, second


def _compare(build, loss_of, kind: str, steps: int, batch: int, backend: str) -> None:
    eager_model, compiled_model = _twins(build)
    batches = _batches(kind, steps, batch)
    eager = _train(eager_model, loss_of, batches, None)
    try:
        compiled = _train(compiled_model, loss_of, batches, backend)
    finally:
        ember._dynamo.reset()
    np.testing.assert_allclose(compiled, eager, rtol=RTOL, atol=ATOL)
    for (name, a), b in zip(eager_model.state_dict().items(), compiled_model.state_dict().values(), strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-3, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_small_gpt_trains_like_eager(backend):
    _compare(lambda: _gpt(2, 32), _gpt_loss, "gpt", 3, 4, backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_cnn_trains_like_eager(backend):
    _compare(lambda: cnn(ember).train(), _cnn_loss, "cnn", 3, 4, backend)


@pytest.mark.slow
def test_gpt_4_layers_20_adamw_steps_aot_eager():
    _compare(lambda: _gpt(4, 128), _gpt_loss, "gpt", 20, 4, "aot_eager")
