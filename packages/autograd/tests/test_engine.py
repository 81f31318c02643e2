"""The backward engine's behaviour and errors against PyTorch's: same program, same outcome."""

from __future__ import annotations

import warnings

import pytest
from opinfo import ORACLE_MISSING, torch
from test_function import data, exp_fn, outcome, same

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


# -- errors ----------------------------------------------------------------------------------------


@needs_torch
def test_backward_twice_without_retain_graph():
    def program(lib):
        x = data(lib, 3)
        y = (x * x).sum()
        y.backward()
        y.backward()

    def retained(lib):
        x = data(lib, 3)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad

    def nothing_saved(lib):
        x = data(lib, 3)
        y = (x + 1).sum()
        y.backward()
        y.backward()
        return x.grad

    for p in (program, retained, nothing_saved):
        same(p)


@needs_torch
def test_implicit_gradient_needs_a_scalar():
    def program(lib):
        (data(lib, 3) * 2).backward()

    def given(lib):
        x = data(lib, 3)
        (x * 2).backward(lib.ones(3, dtype=lib.float64))
        return x.grad

    def wrong_shape(lib):
        (data(lib, 3) * 2).backward(lib.ones(2, dtype=lib.float64))

    for p in (program, given, wrong_shape):
        same(p)


@needs_torch
def test_tensors_that_do_not_require_grad():
    def backward_of_constant(lib):
        data(lib, 3, requires_grad=False).sum().backward()

    def grad_wrt_constant(lib):
        x, c = data(lib, 3), data(lib, 3, requires_grad=False)
        return lib.autograd.grad((x * c).sum(), c)

    def output_without_graph(lib):
        x, c = data(lib, 3), data(lib, 3, requires_grad=False)
        return lib.autograd.grad(c.sum(), x)

    for p in (backward_of_constant, grad_wrt_constant, output_without_graph):
        same(p)


@needs_torch
def test_allow_unused_and_materialize_grads():
    def unused(lib):
        x, z = data(lib, 3), data(lib, 3, seed=1)
        return lib.autograd.grad((x * 2).sum(), (x, z))

    def allowed(lib):
        x, z = data(lib, 3), data(lib, 3, seed=1)
        gx, gz = lib.autograd.grad((x * 2).sum(), (x, z), allow_unused=True)
        return gx, gz is None

    def materialized(lib):
        x, z = data(lib, 3), data(lib, 3, seed=1)
        return lib.autograd.grad((x * 2).sum(), (x, z), materialize_grads=True)

    def contradictory(lib):
        x = data(lib, 3)
        return lib.autograd.grad((x * 2).sum(), x, allow_unused=False, materialize_grads=True)

    for p in (unused, allowed, materialized, contradictory):
        same(p)


@needs_torch
def test_leaf_in_place_and_requires_grad_errors():
    def leaf_inplace(lib):
        data(lib, 3).add_(1)

    def view_of_leaf_inplace(lib):
        data(lib, 3)[0:2].mul_(2)

    def non_leaf_flag(lib):
        (data(lib, 3) * 2).requires_grad_(False)

    def integer_requires_grad(lib):
        lib.ones(3, dtype=lib.int64).requires_grad_()

    for p in (leaf_inplace, view_of_leaf_inplace, non_leaf_flag, integer_requires_grad):
        same(p)


# -- hooks -----------------------------------------------------------------------------------------


@needs_torch
def test_tensor_hooks_order_and_replacement():
    def program(lib):
        log = []
        x = data(lib, 3)
        y = x * 2
        z = y.exp()
        y.register_hook(lambda g: log.append(("y1", g.tolist())))
        y.register_hook(lambda g: g * 10)
        y.register_hook(lambda g: log.append(("y3", g.tolist())))
        handle = x.register_hook(lambda g: log.append(("x-removed",)))
        handle.remove()
        x.register_hook(lambda g: log.append(("x", g.tolist())))
        z.sum().backward()
        return log, x.grad

    def on_constant(lib):
        data(lib, 3, requires_grad=False).register_hook(lambda g: g)

    same(program)
    same(on_constant)


@needs_torch
def test_retain_grad():
    def program(lib):
        x = data(lib, 3)
        y = x * 2
        y.retain_grad()
        z = y.sin()
        flags = [y.retains_grad, z.retains_grad, x.retains_grad]
        z.sum().backward(retain_graph=True)
        first = y.grad.clone()
        z.sum().backward()
        return flags, first, y.grad, x.grad, z.grad is None

    def on_constant(lib):
        data(lib, 3, requires_grad=False).retain_grad()

    same(program)
    same(on_constant)


@needs_torch
def test_post_accumulate_grad_hooks():
    def program(lib):
        log = []
        x = data(lib, 3)

        def hook(t):
            log.append(t.grad.tolist())
            t.grad.mul_(0.5)

        x.register_post_accumulate_grad_hook(hook)
        (x * 3).sum().backward()
        (x * 3).sum().backward()
        return log, x.grad

    def non_leaf(lib):
        (data(lib, 3) * 2).register_post_accumulate_grad_hook(lambda t: None)

    same(program)
    same(non_leaf)


@needs_torch
def test_node_hooks_and_names():
    def program(lib):
        log = []
        x = data(lib, 3)
        y = x.sin()
        z = (y * 2).sum()
        node = y.grad_fn
        node.register_prehook(lambda gout: log.append(("pre", node.name(), [g.tolist() for g in gout])))

        def post(gin, gout):
            log.append(("post", len(gin), len(gout)))
            return (gin[0] + 1,)

        handle = node.register_hook(post)
        z.backward(retain_graph=True)
        handle.remove()
        x.grad = None
        z.backward()
        names = [node.name(), type(node.next_functions[0][0]).__name__, z.grad_fn.name()]
        return log, x.grad, names

    same(program)


@needs_torch
def test_function_node_hooks_run_in_backward_order():
    def program(lib):
        log = []
        x = data(lib, 3)
        a = exp_fn(lib).apply(x)
        b = a.sin()
        b.grad_fn.register_prehook(lambda g: log.append("sin-pre"))
        a.grad_fn.register_prehook(lambda g: log.append("exp-pre"))
        a.grad_fn.register_hook(lambda gi, go: log.append("exp-post"))
        a.register_hook(lambda g: log.append("a-tensor"))
        b.sum().backward()
        return log

    same(program)


# -- anomaly mode ----------------------------------------------------------------------------------


@needs_torch
def test_anomaly_mode_names_the_forward_op_that_gave_nan():
    def program(lib):
        x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
        with lib.autograd.detect_anomaly():
            y = x.sqrt() * 0
            y.sum().backward()

    def off(lib):
        x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
        (x.sqrt() * 0).sum().backward()
        return [str(v) for v in x.grad.tolist()]

    same(program)
    same(off)


def test_anomaly_mode_warns_with_the_forward_trace():
    def forward_with_the_culprit(x):
        return x.sqrt() * 0

    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ember.autograd.detect_anomaly():
            y = forward_with_the_culprit(x)
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output"):
                y.sum().backward()
    messages = [str(w.message) for w in caught]
    assert any("forward_with_the_culprit" in m and "SqrtBackward0" in m for m in messages)


@needs_torch
def test_checkpoint_validity_outside_and_inside_backward():
    def program(lib):
        seen = []

        class Probe(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, g):
                seen.append(lib.autograd._is_checkpoint_valid())
                return g

        x = data(lib, 2)
        Probe.apply(x).sum().backward()
        lib.autograd.grad(Probe.apply(x).sum(), x)
        Probe.apply(x).sum().backward(inputs=[x])
        return seen, lib.autograd._is_checkpoint_valid()

    assert outcome(program, torch) == outcome(program, ember)


@needs_torch
def test_gradient_edges_as_inputs():
    def program(lib):
        x = data(lib, 3)
        h = x.sin()
        y = (h * h).sum()
        edge = lib.autograd.graph.get_gradient_edge(h)
        leaf = lib.autograd.graph.get_gradient_edge(x)
        g_h, g_x = lib.autograd.grad(y, (edge, leaf), retain_graph=True)
        (g_h_again,) = lib.autograd.grad(y, edge)
        return g_h, g_x, g_h_again, edge.node.name(), edge.output_nr, type(leaf.node).__name__

    def constant(lib):
        return lib.autograd.graph.get_gradient_edge(data(lib, 2, requires_grad=False))

    same(program)
    same(constant)


@needs_torch
def test_multi_grad_hooks():
    def program(lib):
        log = []
        a, b = data(lib, 2), data(lib, 2, seed=1)
        c, d = a * b, a * b
        lib.autograd.graph.register_multi_grad_hook((a, b, c, d), lambda gs: log.append([g is not None for g in gs]))
        # which leaf's gradient comes first is the engines' own business: the "any" hook fires once per pass
        first = lib.autograd.graph.register_multi_grad_hook((a, b), lambda g: log.append("any"), mode="any")
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        first.remove()
        lib.autograd.grad(c.sum(), (a, b))
        return log

    def bad_mode(lib):
        return lib.autograd.graph.register_multi_grad_hook((data(lib, 2),), print, mode="some")

    same(program)
    same(bad_mode)


@needs_torch
def test_leaves_accumulate_as_soon_as_ready_in_edge_order():
    def program(lib):
        log = []
        a, b, c = data(lib, 2), data(lib, 2, seed=1), data(lib, 2, seed=2)
        y = (a * b * c).sin() + a
        for name, t in (("a", a), ("b", b), ("c", c), ("y", y)):
            t.register_hook(lambda g, name=name: log.append(name))
            if t.is_leaf:
                t.register_post_accumulate_grad_hook(lambda t, name=name: log.append("acc-" + name))
        (y * y).sum().backward()
        return log

    same(program)
