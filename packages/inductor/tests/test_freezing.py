"""Freezing: parameters and buffers as constants of inference graphs, folded once at compile time."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.core.dispatch import DispatchMode
from ember.inductor import config
from ember.inductor.freezing import FrozenGraph


@pytest.fixture(autouse=True)
def frozen(monkeypatch):
    monkeypatch.setattr(config, "freezing", True)
    ember.compiler.reset()
    yield
    ember.compiler.reset()


class Recorder:
    """Wraps compile_fx_inner as the inner compiler, to see what freezing hands it."""

    def __init__(self, monkeypatch):
        import sys

        cfx = sys.modules["ember.inductor.compile_fx"]
        self.graphs = []
        real = cfx.compile_fx_inner

        def record(gm, inputs):
            compiled = real(gm, inputs)
            self.graphs.append((gm, compiled))
            return compiled

        monkeypatch.setattr(cfx, "compile_fx_inner", record)


class Counting(DispatchMode):
    """Counts the eager calls of each op on real (not fake) tensors."""

    def __init__(self):
        self.calls = {}

    def __ember_dispatch__(self, func, types, args, kwargs):
        self.calls[str(func)] = self.calls.get(str(func), 0) + 1
        return func(*args, **kwargs)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


def _cnn():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(144, 5)).eval()
    with ember.no_grad():
        m[1].running_mean.copy_(ember.randn(4))
        m[1].running_var.copy_(ember.rand(4) + 0.5)
        m[1].weight.copy_(ember.randn(4))
    return m


def test_frozen_mlp_equals_eager_and_folds_the_transposed_weights(monkeypatch):
    rec = Recorder(monkeypatch)
    ember.manual_seed(1)
    m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).eval()
    x = ember.randn(5, 8)
    with ember.no_grad():
        got = ember.compile(m)(x)
        want = m(x)
    _close(got, want)
    gm, _ = rec.graphs[0]
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert "aten.t.default" not in targets  # the weights come in transposed and contiguous, once
    frozen = [n for n in gm.graph.nodes if n.op == "placeholder" and n.name.startswith("frozen")]
    assert len(frozen) == 4  # two transposed weights, two biases


def test_frozen_cnn_folds_batch_norm_into_the_convolution(monkeypatch):
    rec = Recorder(monkeypatch)
    m = _cnn()
    x = ember.randn(2, 3, 8, 8)
    with ember.no_grad():
        got = ember.compile(m)(x)
        want = m(x)
    _close(got, want, 1e-4)
    gm, _ = rec.graphs[0]
    targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not any("batch_norm" in t for t in targets)
    assert "aten.convolution.default" in targets


def test_batch_norm_without_a_convolution_becomes_a_fused_multiply_add(monkeypatch):
    rec = Recorder(monkeypatch)
    ember.manual_seed(2)
    m = nn.Sequential(nn.BatchNorm1d(6), nn.Tanh()).eval()
    with ember.no_grad():
        m[0].running_var.copy_(ember.rand(6) + 0.1)
        m[0].running_mean.copy_(ember.randn(6))
        x = ember.randn(3, 6, 5)
        got = ember.compile(m)(x)
        want = m(x)
    _close(got, want, 1e-5)
    gm, compiled = rec.graphs[0]
    assert not any("batch_norm" in str(n.target) for n in gm.graph.nodes)
    assert compiled.fallbacks == []  # the multiply-add and tanh are one kernel


def test_folded_constants_are_computed_once():
    m = _cnn()
    x = ember.randn(2, 3, 8, 8)
    compiling = Counting()
    with ember.no_grad():
        f = ember.compile(m)
        with compiling:
            first = f(x)
        running = Counting()
        with running:
            for _ in range(3):
                again = f(x)
    # the folding ran eagerly once, at compile time: the batch norm's rsqrt and the transposed weight
    assert compiling.calls.get("aten.rsqrt.default", 0) == 1, compiling.calls
    # later calls run the kernels and the extern convolution/GEMM only: nothing is folded again, and
    # the batch norm (evaluation mode, which reads its statistics) writes nothing back (a Linear's
    # addmm runs as mm, its bias added in a kernel)
    assert set(running.calls) <= {"aten.convolution.default", "aten.mm.default"}
    _close(first, again)


def test_a_frozen_parameter_changed_later_is_not_noticed():
    m = _cnn()
    x = ember.randn(2, 3, 8, 8)
    with ember.no_grad():
        f = ember.compile(m)
        before = f(x)
        m[4].weight.mul_(2)
        after = f(x)  # PyTorch's contract: the frozen values stay
        changed = m(x)
    _close(before, after)
    assert not np.allclose(after.numpy(), changed.numpy())


def test_freezing_leaves_training_graphs_alone():
    ember.manual_seed(3)
    m = nn.Linear(4, 3)
    x = ember.randn(2, 4)
    f = ember.compile(m)
    f(x).sum().backward()
    assert m.weight.grad is not None
    _close(m.weight.grad, x.sum(0).expand(3, 4))


def test_frozen_graph_passes_its_constants():
    g = FrozenGraph(lambda args: args, [1], [ember.ones(1)], 0)
    assert g(["a", "b"])[0] == "b" and g(["a", "b"])[1] is g.constants[0]
