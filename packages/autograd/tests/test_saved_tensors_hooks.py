"""``ember.autograd.graph.saved_tensors_hooks``, ``save_on_cpu`` and ``disable_saved_tensors_hooks``
against PyTorch's."""

from __future__ import annotations

import pytest
from opinfo import ORACLE_MISSING, torch
from test_function import data, exp_fn, same

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def logging_hooks(lib, log: list, tag: str = ""):
    def pack(t):
        log.append(("pack" + tag, list(t.shape), t.requires_grad))
        return ("box", t * 1 if not t.requires_grad else t.detach().clone())

    def unpack(box):
        log.append(("unpack" + tag, list(box[1].shape)))
        return box[1]

    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


@needs_torch
def test_pack_and_unpack_are_called_and_gradients_unchanged():
    def program(lib):
        log = []
        x = data(lib, 3)
        with logging_hooks(lib, log):
            y = (x.sin() * x).exp()
        (g,) = lib.autograd.grad(y.sum(), x)
        return sorted(log), g

    same(program)


@needs_torch
def test_double_backward_reaches_the_original_graph_through_hooks():
    def program(lib):
        log = []
        x = data(lib, 3)
        with logging_hooks(lib, log):
            y = exp_fn(lib).apply(x * x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg

    same(program)


@needs_torch
def test_innermost_hooks_apply_and_no_version_check():
    def program(lib):
        log = []
        x = data(lib, 3)
        with logging_hooks(lib, log, "-outer"), logging_hooks(lib, log, "-inner"):
            a = x * 2
            y = a.exp() * a
        a.add_(1)  # what the hooks keep is theirs: PyTorch checks no version then
        (g,) = lib.autograd.grad(y.sum(), x)
        return sorted({entry[0] for entry in log}), g

    same(program)


@needs_torch
def test_unpack_must_give_a_tensor_and_backward_twice_is_refused():
    def not_a_tensor(lib):
        x = data(lib, 2)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 5):
            y = x.exp()
        return lib.autograd.grad(y.sum(), x)

    def twice(lib):
        x = data(lib, 2)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = x.exp()
        y.sum().backward()
        y.sum().backward()

    same(not_a_tensor)
    same(twice)


@needs_torch
def test_disable_saved_tensors_hooks():
    def enter_hooks_while_disabled(lib):
        graph = lib.autograd.graph
        with graph.disable_saved_tensors_hooks("no hooks here"), graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    def disable_while_hooks(lib):
        graph = lib.autograd.graph
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t), graph.disable_saved_tensors_hooks("no hooks here"):
            pass

    def after(lib):
        with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            pass
        log = []
        x = data(lib, 2)
        with logging_hooks(lib, log):
            x.exp()
        return len(log)

    for program in (enter_hooks_while_disabled, disable_while_hooks, after):
        same(program)


@needs_torch
def test_save_on_cpu():
    def program(lib):
        x = data(lib, 3)
        with lib.autograd.graph.save_on_cpu():
            y = (x * x).sin()
        with lib.autograd.graph.save_on_cpu(pin_memory=True):
            z = x.exp() * x
        return lib.autograd.grad((y + z).sum(), x)

    same(program)


def test_hooks_see_function_saved_tensors_and_leaf_accumulators():
    log = []
    x = ember.tensor([0.5, 1.0, 2.0], requires_grad=True)
    with logging_hooks(ember, log):
        y = exp_fn(ember).apply(x)
    assert log == [("pack", [3], True)]
    y.sum().backward()
    assert log[-1] == ("unpack", [3])
    assert x.grad.tolist() == pytest.approx(x.detach().exp().tolist())


@needs_torch
def test_allow_mutation_on_saved_tensors():
    def program(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            a = data(lib, 2, 3)
            b = a.clone()
            out = (b**2).sum()
            b.sin_()
            out.backward()
            c = a * 1
            d = (c.exp() * c).sum()
            c.mul_(3)
            (gc,) = lib.autograd.grad(d, a)
        return a.grad, b, gc

    def backward_outside(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            b = data(lib, 2) * 1
            out = (b**2).sum()
            b.sin_()
        out.backward()

    def nested(lib):
        graph = lib.autograd.graph
        with graph.allow_mutation_on_saved_tensors(), graph.allow_mutation_on_saved_tensors():
            pass

    for program_ in (program, backward_outside, nested):
        same(program_)
