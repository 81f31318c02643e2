"""Tensors a compiled function makes from Python values (``ember.tensor(2.0)``) reach the code generator as
graph attributes (``get_attr``); they are lifted to inputs, so the graph compiles into kernels."""

from __future__ import annotations

import numpy as np

import ember
from ember.inductor.lifted_constants import WithConstants, lift_constants


def test_a_scalar_tensor_constant():
    fn = ember.compile(lambda x: x * ember.tensor(2.0) + 1, backend="inductor")
    x = ember.arange(4.0)
    np.testing.assert_array_equal(fn(x).numpy(), (x * 2.0 + 1).numpy())


def test_a_constant_in_a_trained_graph():
    def loss(w):
        return (w * ember.tensor([1.0, -2.0, 3.0]) + ember.tensor(0.5)).square().sum()

    w, v = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    ours = ember.compile(loss, backend="inductor")(w)
    ours.backward()
    theirs = loss(v)
    theirs.backward()
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), v.grad.numpy(), rtol=1e-6)


def test_a_graph_without_inputs():
    fn = ember.compile(lambda: ember.tensor([1.0, 2.0]) * 3, backend="inductor")
    assert fn().tolist() == [3.0, 6.0]


def test_the_constants_follow_the_callers_inputs():
    from ember.fx import symbolic_trace

    class Scaled(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", ember.tensor([2.0, 3.0]))

        def forward(self, x):
            return x * self.scale

    gm = symbolic_trace(Scaled())
    seen = []

    def inner(graph_module, inputs):
        seen.append([n.op for n in graph_module.graph.nodes])
        return lambda args: [args[0] * args[1]]

    compiled = lift_constants(inner)(gm, [ember.ones(2)])
    assert isinstance(compiled, WithConstants)
    assert "get_attr" not in seen[0] and seen[0].count("placeholder") == 2
    assert compiled([ember.ones(2)])[0].tolist() == [2.0, 3.0]
