"""A graph built by hand runs, prints and survives copying (no oracle needed)."""

import copy
import operator

import numpy as np

import ember
import ember.fx as fx


def _module() -> fx.GraphModule:
    g = fx.Graph()
    x = g.placeholder("x")
    lin = g.call_module("lin", (x,))
    r = g.call_function(ember.relu, (lin,))
    g.output(g.call_function(operator.add, (r, x)))
    root = ember.nn.Module()
    root.lin = ember.nn.Linear(3, 3)
    return fx.GraphModule(root, g)


def _same(a, b) -> bool:
    return np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_graph_module_runs_its_code():
    gm = _module()
    x = ember.randn(2, 3)
    expected = ember.relu(gm.lin(x)) + x
    assert _same(gm(x), expected)
    assert "relu = ember.relu(lin);  lin = None" in gm.code
    assert _same(copy.deepcopy(gm)(x), expected)
    assert _same(fx.Interpreter(gm).run(x), expected)
