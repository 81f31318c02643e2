"""RNN, LSTM and GRU against PyTorch: outputs, final states and gradients from the same weights."""

from __future__ import annotations

import pytest
from layer_oracle import compare, copy_weights, tensors, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the test oracle) is not installed")

CONFIGS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"bias": False},
]


def _pair(kind: str, **options):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(3, 4, **options).double()
    ours = getattr(ember.nn, kind)(3, 4, **options).double()
    copy_weights(theirs, ours)
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("options", CONFIGS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_matches_pytorch(kind, options):
    ours, theirs = _pair(kind, **options)
    shape = (2, 5, 3) if options.get("batch_first") else (5, 2, 3)
    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, shape))


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "GRU"])
def test_an_initial_state_and_unbatched_input(kind):
    ours, theirs = _pair(kind, num_layers=2)
    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (5, 2, 3), (2, 2, 4)))
    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (5, 3), (2, 4)))


@needs_torch
def test_lstm_with_initial_state_projection_and_relu_rnn():
    ours, theirs = _pair("LSTM", num_layers=2, proj_size=2, bidirectional=True)
    compare(
        ours, theirs, lambda rng, lib: [*tensors(rng, lib, (5, 2, 3)), tuple(tensors(rng, lib, (4, 2, 2), (4, 2, 4)))]
    )
    ours, theirs = _pair("RNN", nonlinearity="relu")
    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (4, 2, 3)))


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_parameters_print_and_init_as_pytorch(kind):
    ours, theirs = _pair(kind, num_layers=2, bidirectional=True, batch_first=True, dropout=0.5)
    assert repr(ours) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    fresh = getattr(ember.nn, kind)(3, 4)
    bound = 1 / 2
    assert all(float(p.abs().max()) <= bound for p in fresh.parameters())


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        ember.nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        ember.nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        ember.nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(RuntimeError, match=r"input\.size\(-1\) must be equal to input_size\. Expected 3, got 2"):
        ember.nn.LSTM(3, 4)(ember.randn(5, 1, 2))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 1, 4\\), got \\[2, 1, 4\\]"):
        ember.nn.GRU(3, 4)(ember.randn(5, 1, 3), ember.randn(2, 1, 4))
