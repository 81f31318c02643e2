"""nn modules through aot_module and aot_module_simplified: outputs and gradients equal eager's, and
20 AdamW steps of the small GPT give eager's losses."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "nn" / "tests"))

from training_models import cnn, cnn_batch, gpt, gpt_batch

import ember
from ember.aot import (
    aot_module,
    aot_module_simplified,
    default_partition,
    min_cut_rematerialization_partition,
    nop,
)
from ember.fx import symbolic_trace

nn = ember.nn
PARTITIONERS = [default_partition, min_cut_rematerialization_partition]


def _block():
    """One block of the small GPT (attention and MLP with residuals)."""
    model = gpt(ember, vocab=16, width=16, layers=1, heads=2, context=8)
    return model.blocks[0]


def _randn(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


MODULES = {
    "Linear": (lambda: nn.Linear(4, 5), lambda: (_randn(3, 4),)),
    "Conv2d": (lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: (_randn(2, 3, 6, 6),)),
    "LayerNorm": (lambda: nn.LayerNorm(6), lambda: (_randn(3, 6),)),
    "BatchNorm2d eval": (lambda: nn.BatchNorm2d(3).eval(), lambda: (_randn(2, 3, 4, 4),)),
    "GRU": (lambda: nn.GRU(4, 5, batch_first=True), lambda: (_randn(2, 3, 4),)),
    "MultiheadAttention": (
        lambda: nn.MultiheadAttention(8, 2, batch_first=True),
        lambda: (_randn(2, 3, 8), _randn(2, 3, 8, seed=1), _randn(2, 3, 8, seed=2)),
    ),
    "GPT block": (_block, lambda: (_randn(2, 8, 16),)),
    "CNN eval": (lambda: cnn(ember).eval(), lambda: (_randn(2, 3, 8, 8),)),
}


def _loss(out):
    outs = out if isinstance(out, tuple) else (out,)
    total = 0
    for i, o in enumerate(outs):
        if isinstance(o, ember.Tensor) and o.requires_grad:
            total = total + (o * (i + 1)).sin().sum()
    return total


def _grads(module):
    return {k: p.grad.clone() for k, p in module.named_parameters() if p.grad is not None}


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()), np.asarray(b.detach()), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("partition", PARTITIONERS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_gradients_equal_eager(name, partition):
    make, inputs = MODULES[name]
    ember.manual_seed(0)
    module = make()
    reference = copy.deepcopy(module)
    args = inputs()
    out = aot_module(module, nop, partition_fn=partition)(*args)
    expected = reference(*args)
    for a, b in zip(_tensors(out), _tensors(expected), strict=True):
        _close(a, b)
    _loss(out).backward()
    _loss(expected).backward()
    ours, theirs = _grads(module), _grads(reference)
    assert set(ours) == set(theirs) == {k for k, p in module.named_parameters() if p.requires_grad}
    for key in theirs:
        _close(ours[key], theirs[key])


def _tensors(out):
    return [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, ember.Tensor)]


@pytest.mark.parametrize("partition", PARTITIONERS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("name", ["BatchNorm2d", "CNN"])
def test_training_mode_batch_norm_updates_buffers_as_eager(name, partition):
    make = {"BatchNorm2d": lambda: nn.BatchNorm2d(3), "CNN": lambda: cnn(ember)}[name]
    ember.manual_seed(0)
    module = make()
    x = _randn(4, 3, 8, 8)
    reference = copy.deepcopy(module)
    compiled = aot_module(module, nop, partition_fn=partition)
    for _ in range(2):
        out, expected = compiled(x), reference(x)
        _close(out, expected)
        _loss(out).backward()
        _loss(expected).backward()
    for (key, a), b in zip(module.named_buffers(), reference.buffers(), strict=True):
        np.testing.assert_allclose(
            np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64"), rtol=1e-5, err_msg=key
        )
    ours, theirs = _grads(module), _grads(reference)
    for key in theirs:
        _close(ours[key], theirs[key])


def test_aot_module_simplified_lifts_parameters_and_buffers():
    module = _block()
    gm = symbolic_trace(module)
    graphs = []

    def compiler(fx_g, example_inputs):
        graphs.append(fx_g)
        return nop(fx_g, example_inputs)

    x = _randn(2, 8, 16)
    compiled = aot_module_simplified(gm, [x], compiler, compiler, partition_fn=min_cut_rematerialization_partition)
    (out,) = [compiled(x)]
    _close(out, module(x))
    _loss(out).backward()
    ours = {k: p.grad.clone() for k, p in gm.named_parameters()}
    for p in module.parameters():
        p.grad = None
    _loss(module(x)).backward()
    for key, p in module.named_parameters():
        _close(ours[key], p.grad)
    placeholders = [n for n in graphs[0].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == len(list(gm.parameters())) + 1


def test_gpt_adamw_losses_equal_eager():
    """20 AdamW steps of the training benchmark's GPT (4 layers, width 128, context 64, batch 16)
    compiled with the min-cut partitioner."""
    ember.manual_seed(0)
    model = gpt(ember)
    reference = copy.deepcopy(model)
    compiled = aot_module(model, nop, partition_fn=min_cut_rematerialization_partition)
    optimizers = [ember.optim.AdamW(m.parameters(), lr=3e-3) for m in (model, reference)]
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(20):
        x, y = (ember.tensor(a) for a in gpt_batch(rng))
        pair = []
        for run, optimizer in zip((compiled, reference), optimizers, strict=True):
            loss = run(x, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            pair.append(float(loss))
        losses.append(pair)
    ours, theirs = np.array(losses).T
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    assert theirs[-1] < theirs[0]  # it trains


def test_cnn_eval_outputs_equal_eager():
    ember.manual_seed(0)
    model = cnn(ember).eval()
    x, _ = cnn_batch(np.random.default_rng(0), batch=2)
    x = ember.tensor(x)
    with ember.no_grad():
        _close(aot_module(model, nop)(x), model(x))


def test_gpt_with_dropout_draws_eagers_numbers():
    """Dropout (in the MLP and inside attention) through the min-cut partitioner: with the Philox state
    threaded through the graphs, losses, gradients and the generator's offset equal eager's."""
    ember.manual_seed(0)
    model = gpt(ember, vocab=32, width=32, layers=1, heads=2, context=16, dropout=0.2)
    reference = copy.deepcopy(model)
    compiled = aot_module(model, nop, partition_fn=min_cut_rematerialization_partition)
    rng = np.random.default_rng(0)
    for step in range(2):
        x, y = (ember.tensor(a) for a in gpt_batch(rng, batch=2, context=16, vocab=32))
        results = []
        for run in (compiled, reference):
            ember.manual_seed(step)
            loss = run(x, y)
            loss.backward()
            results.append((float(loss), ember.default_generator.get_offset()))
        assert results[0] == results[1]
        for a, b in zip(model.parameters(), reference.parameters(), strict=True):
            _close(a.grad, b.grad)
        model.zero_grad()
        reference.zero_grad()
