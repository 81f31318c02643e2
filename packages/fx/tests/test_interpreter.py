"""Interpreter and Transformer (no oracle needed): results equal the GraphModule's."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ember
import ember.fx as fx


def _values(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def _module() -> fx.GraphModule:
    root = ember.nn.Module()
    root.lin = ember.nn.Linear(3, 3)
    root.register_buffer("bias", ember.ones(3))
    g = fx.Graph()
    x = g.placeholder("x")
    k = g.placeholder("k", default_value=2.0)
    h = g.call_module("lin", (x,))
    b = g.get_attr("bias")
    s = g.call_function(operator.add, (h, b))
    m = g.call_function(operator.mul, (s, k))
    r = g.call_function(ember.relu, (m,))
    t = g.call_method("sum", (r,), {"dim": 1})
    g.output((t, r))
    return fx.GraphModule(root, g)


def test_interpreter_equals_graph_module():
    gm = _module()
    x = ember.randn(4, 3)
    for args in ((x,), (x, 3.0)):
        expected = gm(*args)
        got = fx.Interpreter(gm).run(*args)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(_values(a), _values(b))


def test_interpreter_frees_values_after_last_use():
    gm = _module()
    interp = fx.Interpreter(gm)
    interp.run(ember.randn(2, 3))
    assert [n.op for n in interp.env] == ["output"]
    keep = fx.Interpreter(gm, garbage_collect_values=False)
    keep.run(ember.randn(2, 3))
    assert [n.name for n in keep.env] == [n.name for n in gm.graph.nodes]


def test_initial_env_skips_nodes():
    gm = _module()
    relu = next(n for n in gm.graph.nodes if n.target is ember.relu)
    fixed = ember.ones(2, 3)
    out = fx.Interpreter(gm).run(ember.randn(2, 3), initial_env={relu: fixed})
    assert out[1] is fixed and out[0].tolist() == [3.0, 3.0]


def test_boxed_run_clears_its_arguments():
    gm = _module()
    x = ember.randn(2, 3)
    expected = gm(x, 2.0)
    args = [x, 2.0]
    got = fx.Interpreter(gm).boxed_run(args)
    assert args == []
    np.testing.assert_allclose(_values(got[0]), _values(expected[0]))
    with pytest.raises(
        RuntimeError, match="expected 2 arguments for placeholders but received 1 \\(missing arguments\\)"
    ):
        fx.Interpreter(gm).boxed_run([x])


def test_missing_argument_and_errors_name_the_node():
    gm = _module()
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        fx.Interpreter(gm).run()
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.truediv, (x, 0)))
    with pytest.raises(ZeroDivisionError, match=r"While executing %truediv : \[num_users=1\] = call_function"):
        fx.Interpreter(fx.GraphModule(ember.nn.Module(), g)).run(1)


def test_fetch_attr_and_nonexistent_targets():
    gm = _module()
    interp = fx.Interpreter(gm)
    assert interp.fetch_attr("lin.weight") is gm.lin.weight
    with pytest.raises(RuntimeError, match=r"Node referenced nonexistent target lin\.nothing"):
        interp.fetch_attr("lin.nothing")


def test_varargs_placeholder():
    g = fx.Graph()
    rest = g.placeholder("*args")
    g.output(g.call_function(len, (rest,)))
    gm = fx.GraphModule(ember.nn.Module(), g)
    assert gm(1, 2, 3) == 3
    assert fx.Interpreter(gm).run(1, 2, 3) == 3


def test_interpreter_subclass_changes_meaning():
    class SwapReluForNeg(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                return -args[0]
            return super().call_function(target, args, kwargs)

    gm = _module()
    x = ember.randn(2, 3)
    out = SwapReluForNeg(gm).run(x)[1]
    np.testing.assert_allclose(_values(out), _values(-((gm.lin(x) + gm.bias) * 2.0)), rtol=1e-6)


def test_interpreter_runs_another_graph_over_the_module_state():
    gm = _module()
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.add, (g.call_module("lin", (x,)), g.get_attr("bias"))))
    x_val = ember.randn(2, 3)
    got = fx.Interpreter(gm, graph=g).run(x_val)
    np.testing.assert_allclose(_values(got), _values(gm.lin(x_val) + gm.bias))


def test_transformer_identity():
    gm = _module()
    new = fx.Transformer(gm).transform()
    assert isinstance(new, fx.GraphModule) and new is not gm
    assert new.code == gm.code and str(new.graph) == str(gm.graph)
    x = ember.randn(2, 3)
    for a, b in zip(new(x), gm(x), strict=True):
        np.testing.assert_allclose(_values(a), _values(b))
    new.graph.lint()


def test_transformer_keeps_metadata_and_defaults():
    gm = _module()
    for n in gm.graph.nodes:
        n.meta.update(stack_trace=f"trace of {n.name}", nn_module_stack={"m": n.name}, val=n.name)
    new = fx.Transformer(gm).transform()
    for old_node, new_node in zip(gm.graph.nodes, new.graph.nodes, strict=True):
        if old_node.op == "placeholder":
            assert new_node.meta == {}
        elif old_node.op == "output":
            assert new_node.meta == old_node.meta
        else:
            # what PyTorch's preserve_node_meta carries over: the stack trace and a list of fields
            assert new_node.meta == {
                "stack_trace": f"trace of {old_node.name}",
                "nn_module_stack": {"m": old_node.name},
            }
    assert next(n for n in new.graph.nodes if n.name == "k").args == (2.0,)


def test_transformer_overrides_can_compute_on_proxies():
    class Doubler(fx.Transformer):
        def call_function(self, target, args, kwargs):
            out = super().call_function(target, args, kwargs)
            return out * 2 if target is ember.relu else out

        def call_module(self, target, args, kwargs):
            return super().call_module(target, args, kwargs).neg()

    gm = _module()
    new = Doubler(gm).transform()
    new.graph.lint()
    x = ember.randn(2, 3)
    r = ember.relu((-gm.lin(x) + gm.bias) * 2.0) * 2
    np.testing.assert_allclose(_values(new(x)[1]), _values(r), rtol=1e-6)
    np.testing.assert_allclose(_values(new(x)[0]), _values(r.sum(dim=1)), rtol=1e-6)


def test_rewriting_transformer():
    class ReluToSigmoid(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                return super().call_function(ember.sigmoid, args, kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "sum":
                return super().call_method("mean", args, kwargs)
            return super().call_method(target, args, kwargs)

    gm = _module()
    new = ReluToSigmoid(gm).transform()
    assert "ember.sigmoid(mul)" in new.code and ".mean(" in new.code and "relu" not in new.code.split("=")[0]
    x = ember.randn(2, 3)
    pre = gm.lin(x) + gm.bias
    t, r = new(x)
    np.testing.assert_allclose(_values(r), _values(ember.sigmoid(pre * 2.0)), rtol=1e-6)
    np.testing.assert_allclose(_values(t), _values(ember.sigmoid(pre * 2.0).mean(dim=1)), rtol=1e-6)


def test_run_node_logs_at_debug_level(caplog):
    gm = _module()
    with caplog.at_level("DEBUG", logger="ember.fx.interpreter"):
        fx.Interpreter(gm).run(ember.randn(1, 3))
    lines = [r.getMessage() for r in caplog.records if r.name == "ember.fx.interpreter"]
    assert lines[0] == "run_node %x : [num_users=1] = placeholder[target=x]"
    assert len(lines) == len(gm.graph.nodes)
