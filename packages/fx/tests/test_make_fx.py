"""``make_fx``: graphs of ops traced through the dispatcher run as the traced function did."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ember
import ember.library
from ember.fx.experimental.proxy_tensor import make_fx
from ember.ops import aten


def _targets(gm) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def _close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a.detach()), np.asarray(b.detach()), rtol=1e-6, atol=1e-6)


def test_ops_are_recorded_in_order_and_the_graph_reruns():
    def f(x, y):
        z = (x @ y).relu()
        return z.sum(1), z.t()

    x, y = ember.randn(3, 4), ember.randn(4, 5)
    gm = make_fx(f)(x, y)
    assert _targets(gm) == [aten.mm.default, aten.relu.default, aten.sum.dim_IntList, aten.t.default]
    x2, y2 = ember.randn(3, 4), ember.randn(4, 5)
    for ours, eager in zip(gm(x2, y2), f(x2, y2), strict=True):
        _close(ours, eager)
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["x_1", "y_1"]


def test_in_place_ops_and_views_keep_their_order():
    def f(x):
        v = x.view(2, 6)
        v.mul_(2)
        x.add_(1)
        return v.sum(0)

    x = ember.arange(12.0).reshape(3, 4)
    gm = make_fx(f)(x.clone())
    assert _targets(gm) == [aten.view.default, aten.mul_.Tensor, aten.add_.Tensor, aten.sum.dim_IntList]
    # the in-place ops write through the input, as the eager function does
    a, b = x.clone(), x.clone()
    _close(gm(a), f(b))
    _close(a, b)


def test_backward_is_traced():
    def f(x, w):
        loss = (x @ w).tanh().sum()
        (grad,) = ember.autograd.grad(loss, [w])
        return loss, grad

    x, w = ember.randn(3, 4), ember.randn(4, 5, requires_grad=True)
    gm = make_fx(f)(x, w)
    targets = _targets(gm)
    assert targets[:3] == [aten.mm.default, aten.tanh.default, aten.sum.default]
    assert targets.count(aten.mm.default) == 2  # forward, and x^T @ grad in backward
    # the backward reads the traced forward's output, not a copy of it held as a constant
    assert not [n for n in gm.graph.nodes if n.op == "get_attr"]
    w2 = ember.randn(4, 5, requires_grad=True)
    for ours, eager in zip(gm(x, w2.detach()), f(x, w2), strict=True):
        _close(ours, eager)


def test_autograd_function_is_traced_through_its_ops():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x * x

    def f(x):
        y = Cube.apply(x)
        y.sum().backward()
        return y, x.grad

    x = ember.randn(4, requires_grad=True)
    gm = make_fx(f)(x)
    assert aten.mul.Tensor in _targets(gm)
    x2 = ember.randn(4, requires_grad=True)
    out, grad = gm(x2)
    _close(grad, 3 * x2.detach() ** 2)
    _close(out, x2.detach() ** 3)


def test_constants_become_attributes():
    table = ember.arange(5.0)

    def f(x):
        return x + table

    gm = make_fx(f)(ember.ones(5))
    (const,) = [n for n in gm.graph.nodes if n.op == "get_attr"]
    assert const.target == "_tensor_constant0"
    _close(gm(ember.zeros(5)), table)


def test_random_ops_are_recorded_and_draw_from_the_generator():
    def f(x):
        return x + ember.rand(3), ember.nn.functional.dropout(x, 0.5)

    gm = make_fx(f)(ember.ones(3))
    assert {aten.rand.default, aten.rand.generator} & set(_targets(gm))
    ember.manual_seed(7)
    eager = f(ember.ones(3))
    ember.manual_seed(7)
    traced = gm(ember.ones(3))
    for a, b in zip(traced, eager, strict=True):
        _close(a, b)


def test_custom_ops_are_recorded_as_themselves():
    @ember.library.custom_op("fxtest::scale_add", mutates_args=())
    def scale_add(x: ember.Tensor, y: ember.Tensor, a: float) -> ember.Tensor:
        return x * a + y

    @scale_add.register_fake
    def _(x, y, a):
        return ember.empty_like(x)

    def f(x, y):
        return scale_add(x, y, 2.0).relu()

    x, y = ember.randn(3), ember.randn(3)
    gm = make_fx(f)(x, y)
    assert _targets(gm)[0] is ember.ops.fxtest.scale_add.default
    _close(gm(x, y), f(x, y))


def test_multiple_outputs_are_read_by_getitem():
    def f(x):
        values, indices = x.max(1)
        return values * 2, indices

    gm = make_fx(f)(ember.randn(3, 4))
    getitems = [n for n in gm.graph.nodes if n.target is operator.getitem]
    assert [n.args[1] for n in getitems] == [0, 1]
    x = ember.randn(3, 4)
    for a, b in zip(gm(x), f(x), strict=True):
        _close(a, b)


def test_decomposition_table_replaces_an_op_by_its_parts():
    def f(x):
        return ember.nn.functional.silu(x)

    def silu(x):
        return x * ember.sigmoid(x)

    gm = make_fx(f, decomposition_table={aten.silu.default: silu})(ember.randn(4))
    assert _targets(gm) == [aten.sigmoid.default, aten.mul.Tensor]
    x = ember.randn(4)
    _close(gm(x), f(x))


def test_nested_inputs_and_outputs():
    def f(d, xs):
        return {"sum": d["a"] + xs[0], "prod": d["b"] * xs[1]}

    args = ({"a": ember.ones(2), "b": ember.full((2,), 3.0)}, [ember.ones(2), ember.full((2,), 2.0)])
    gm = make_fx(f)(*args)
    out = gm(*args)
    assert set(out) == {"sum", "prod"}
    _close(out["prod"], ember.full((2,), 6.0))


def test_stack_trace_names_the_users_line():
    def f(x):
        return x.exp()  # the line the node records

    gm = make_fx(f)(ember.ones(2))
    (node,) = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert "return x.exp()  # the line the node records" in node.meta["stack_trace"]
    assert __file__ in node.meta["stack_trace"]


def test_tracing_mode_is_checked():
    with pytest.raises(AssertionError, match="tracing"):
        make_fx(lambda x: x, tracing_mode="wrong")


def test_traced_graphs_are_logged_with_the_users_lines(capsys):
    import logging

    import ember.logs

    def f(x):
        return x.exp()  # the line the log shows

    try:
        ember.logs.set_logs(fx=logging.DEBUG, fx_graphs=True)
        make_fx(f)(ember.ones(2))
    finally:
        ember.logs.set_logs()
    err = capsys.readouterr().err
    assert "make_fx(real) traced" in err and "2 nodes" not in err
    assert "ember.ops.aten.exp.default(x_1)" in err
    assert "return x.exp()  # the line the log shows" in err


def test_symbolic_graph_holds_for_other_sizes_and_names_its_guards():
    def f(x, y):
        if x.shape[0] > 2:
            return (x @ y).sum(0) * x.shape[0]
        return y

    gm = make_fx(f, tracing_mode="symbolic")(ember.randn(3, 4), ember.randn(4, 5))
    sizes = [n for n in gm.graph.nodes if n.target is aten.sym_size.int]
    assert [n.args[1] for n in sizes] == [0]
    x, y = ember.randn(7, 2), ember.randn(2, 6)
    _close(gm(x, y), f(x, y))
    guards = gm.shape_env.produce_guards([n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"], ["x", "y"])
    assert "3 <= x.size()[0]" in guards, guards  # the branch taken: x.shape[0] > 2


def test_fake_tracing_of_a_large_matmul_on_a_cuda_device_allocates_nothing():
    from ember._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        a = ember.empty(200_000, 200_000, device="cuda")
    gm = make_fx(lambda a, b: (a @ b).relu(), tracing_mode="fake")(a, a)
    (relu,) = [n for n in gm.graph.nodes if n.target is aten.relu.default]
    assert tuple(relu.meta["val"].shape) == (200_000, 200_000)
    assert relu.meta["val"].device == ember.device("cuda:0")
    assert mode is not None


def test_pooling_backward_is_traced_with_its_input():
    def f(x):
        (grad,) = ember.autograd.grad(ember.nn.functional.max_pool2d(x, 2).sum(), [x])
        return grad

    x = ember.randn(1, 2, 4, 4, requires_grad=True)
    gm = make_fx(f)(x)
    assert aten.max_pool2d_with_indices_backward.default in _targets(gm)
    _close(gm(x.detach()), f(x))


def test_an_argument_a_graph_cannot_hold_is_refused_by_name():
    class Opaque:
        pass

    with pytest.raises(TypeError, match=r"type Opaque .* cannot be held by a graph"):
        make_fx(lambda x: aten.add.Tensor(x, Opaque()))(ember.ones(2))
