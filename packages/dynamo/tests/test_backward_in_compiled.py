"""``loss.backward()`` inside a compiled function: a graph break, as in PyTorch without compiled autograd.

Captured into the graph, ``backward()`` ran the engine again while AOT autograd traced the graph
("Trying to backward through the graph a second time"): a compiled training step failed. The code
before the call now runs as a graph, the engine runs eagerly through it, and the rest resumes.
"""

from __future__ import annotations

import numpy as np

import ember


def _models():
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 1))
    twin = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 1))
    twin.load_state_dict(m.state_dict())
    return m, twin


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = (model(x) - y).square().mean()
    loss.backward()
    opt.step()
    return loss


def test_a_compiled_training_step_equals_eager():
    m, twin = _models()
    opt, twin_opt = ember.optim.SGD(m.parameters(), lr=0.1), ember.optim.SGD(twin.parameters(), lr=0.1)
    x, y = ember.randn(16, 4), ember.randn(16, 1)
    step = ember.compile(_step)
    for _ in range(4):
        ours, theirs = step(m, opt, x, y), _step(twin, twin_opt, x, y)
        np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-5)
    for a, b in zip(m.parameters(), twin.parameters(), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_backward_and_hooks_are_graph_breaks():
    def fn(w):
        seen = []
        y = w * 3
        y.register_hook(lambda g: seen.append(g) or g)
        y.retain_grad()
        y.sum().backward()
        return y.grad, len(seen)

    w = ember.ones(3, requires_grad=True)
    explanation = ember._dynamo.explain(fn)(w)
    reasons = " ".join(str(r) for r in explanation.break_reasons)
    assert "register_hook" in reasons and "backward" in reasons
    w1, w2 = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    (grad_c, hooks_c), (grad_e, hooks_e) = ember.compile(fn)(w1), fn(w2)
    assert grad_c.tolist() == grad_e.tolist() == [1.0, 1.0, 1.0] and hooks_c == hooks_e == 1
    assert w1.grad.tolist() == w2.grad.tolist() == [3.0, 3.0, 3.0]


def test_autograd_grad_inside_a_compiled_function():
    def fn(w, x):
        (gw,) = ember.autograd.grad((w * x).sum(), [w])
        return gw * 2

    w, x = ember.ones(3, requires_grad=True), ember.arange(3.0)
    assert ember.compile(fn)(w, x).tolist() == fn(w, x).tolist() == [0.0, 2.0, 4.0]


def test_zero_grad_is_captured_and_replayed():
    m, _ = _models()
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    for p in m.parameters():
        p.grad = ember.ones_like(p)

    def clear_and_scale(x):
        opt.zero_grad()
        return x * 2, [p.grad is None for p in m.parameters()]

    explanation = ember._dynamo.explain(clear_and_scale)(ember.ones(2))
    assert explanation.graph_break_count == 0
    for p in m.parameters():
        p.grad = ember.ones_like(p)
    out, seen = ember.compile(clear_and_scale)(ember.ones(2))
    assert out.tolist() == [2.0, 2.0] and all(seen)
    assert all(p.grad is None for p in m.parameters())


def test_other_grad_assignments_still_break():
    def assign(w, g):
        w.grad = g
        return w * 1

    explanation = ember._dynamo.explain(assign)(ember.ones(2, requires_grad=True), ember.ones(2))
    assert explanation.graph_break_count == 1
    w = ember.ones(2, requires_grad=True)
    ember.compile(assign)(w, ember.full((2,), 3.0))
    assert w.grad.tolist() == [3.0, 3.0]


def test_a_training_step_breaks_only_at_backward():
    """The eager code around the break (the engine, then the step) calls ``nn.Module``'s attribute
    dunders from C; frames starting there are not compiled (they read ``self.__dict__``)."""
    m, _ = _models()
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    x, y = ember.randn(16, 4), ember.randn(16, 1)
    explanation = ember._dynamo.explain(_step)(m, opt, x, y)
    reasons = [str(r) for r in explanation.break_reasons]
    assert explanation.graph_break_count == 1 and "backward" in reasons[0], reasons
