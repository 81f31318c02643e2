"""The compile backends built on AOT autograd, the PyTorch module paths, and what AOT autograd logs."""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

import numpy as np
import pytest

import ember
import ember.logs
from ember._decomp import core_aten_decompositions
from ember.aot import aot_function, backends, min_cut_rematerialization_partition, nop
from ember.fx import symbolic_trace


class Net(ember.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = ember.nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x).relu().sum(1)


def test_backends_are_registered_and_declared_as_entry_points():
    assert {"aot_eager", "aot_eager_decomp_partition"} <= set(backends.list_backends())
    declared = {e.name: e for e in entry_points(group="ember.compile_backends")}
    for name in ("aot_eager", "aot_eager_decomp_partition"):
        assert declared[name].load() is backends.lookup_backend(name)
    with pytest.raises(ValueError, match="unknown compile backend 'nope'"):
        backends.lookup_backend("nope")
    with pytest.raises(RuntimeError, match="already registered"):
        backends.register_backend(lambda gm, inputs: gm, name="aot_eager")


def test_aot_eager_runs_a_captured_graph_with_eager_gradients():
    ember.manual_seed(0)
    net = Net()
    gm = symbolic_trace(net)
    x = ember.randn(5, 4)
    compiled = backends.lookup_backend("aot_eager")(gm, [x])
    out = compiled(x)
    expected = net(x)
    np.testing.assert_allclose(np.asarray(out.detach()), np.asarray(expected.detach()), rtol=1e-6)
    out.sum().backward()
    ours = [p.grad.clone() for p in gm.parameters()]
    net.zero_grad()
    expected.sum().backward()
    for a, p in zip(ours, net.parameters(), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(p.grad), rtol=1e-6)


def test_aot_eager_decomp_partition_runs_core_ops():
    ember.manual_seed(0)
    net = Net()
    gm = symbolic_trace(net)
    x = ember.randn(5, 4)
    compiled = backends.lookup_backend("aot_eager_decomp_partition")(gm, [x])
    out = compiled(x)
    np.testing.assert_allclose(np.asarray(out.detach()), np.asarray(net(x).detach()), rtol=1e-6)
    out.sum().backward()
    assert all(p.grad is not None for p in gm.parameters())


def test_decompositions_leave_only_core_ops():
    decompositions = core_aten_decompositions()
    graphs = []

    def compiler(gm, example_inputs):
        graphs.append(gm)
        return nop(gm, example_inputs)

    def f(x, w):
        return ember.nn.functional.gelu(ember.nn.functional.layer_norm(x @ w, (4,))).log_softmax(-1).mean()

    x, w = ember.randn(3, 5, requires_grad=True), ember.randn(5, 4, requires_grad=True)
    compiled = aot_function(
        f, compiler, partition_fn=min_cut_rematerialization_partition, decompositions=decompositions
    )
    compiled(x, w).backward()
    ours = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    f(x, w).backward()
    for a, b in zip(ours, (x.grad, w.grad), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert len(graphs) == 2
    ops = {n.target for gm in graphs for n in gm.graph.nodes if n.op == "call_function" and hasattr(n.target, "tags")}
    assert ops and all("core" in op.tags for op in ops), sorted(str(op) for op in ops if "core" not in op.tags)


def test_pytorch_module_paths():
    from ember._functorch import aot_autograd, config, partitioners

    assert aot_autograd.aot_function is aot_function
    assert aot_autograd.aot_module_simplified is ember.aot.aot_module_simplified
    assert partitioners.min_cut_rematerialization_partition is min_cut_rematerialization_partition
    assert config is ember.aot.config  # the module itself: a setting made at either path holds at both


def test_logs_show_graphs_with_the_users_lines_and_the_saved_count(capsys):
    def f(x):
        return x.sin().cos()  # the line the forward graph shows

    x = ember.randn(3, requires_grad=True)
    try:
        ember.logs.set_logs(aot=logging.INFO, aot_graphs=True, aot_joint_graph=True)
        aot_function(f, nop, partition_fn=min_cut_rematerialization_partition)(x).sum().backward()
    finally:
        ember.logs.set_logs()
    err = capsys.readouterr().err
    assert "the partitioner saved 1 tensors" in err
    assert "AOT joint graph of" in err and "AOT forward graph of" in err and "AOT backward graph of" in err
    assert "return x.sin().cos()  # the line the forward graph shows" in err
    assert "tangents_1" in err


def test_logs_are_quiet_by_default(capsys):
    aot_function(lambda x: x.exp(), nop)(ember.randn(3, requires_grad=True))
    assert "AOT" not in capsys.readouterr().err
