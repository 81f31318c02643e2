"""Saving parameters and whole modules: ``ember.save`` writes Parameters as ``torch.nn.Parameter``."""

from __future__ import annotations

import io

import pytest

import ember
import ember.nn as nn


def test_a_parameter_round_trips_as_a_parameter():
    p = nn.Parameter(ember.arange(3.0))
    buf = io.BytesIO()
    ember.save({"p": p, "frozen": nn.Parameter(ember.ones(2), requires_grad=False)}, buf)
    buf.seek(0)
    loaded = ember.load(buf)
    assert type(loaded["p"]) is nn.Parameter and loaded["p"].requires_grad
    assert loaded["p"].tolist() == [0.0, 1.0, 2.0]
    assert type(loaded["frozen"]) is nn.Parameter and not loaded["frozen"].requires_grad


def test_a_whole_module_saves_and_loads_without_weights_only():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    buf = io.BytesIO()
    ember.save(model, buf)
    buf.seek(0)
    loaded = ember.load(buf, weights_only=False)
    x = ember.randn(5, 3)
    assert bool((loaded(x) == model(x)).all())
    assert all(type(p) is nn.Parameter for p in loaded.parameters())


def test_pytorch_reads_our_parameters():
    torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
    buf = io.BytesIO()
    ember.save(nn.Linear(2, 3).state_dict(keep_vars=True), buf)
    buf.seek(0)
    state = torch.load(buf)
    assert type(state["weight"]) is torch.nn.Parameter and tuple(state["weight"].shape) == (3, 2)
