"""A graph break inside ``with ember.no_grad():`` keeps the mode for the code after the graph, on every
backend (AOT autograd runs a graph under its own grad mode, so the graph's switch is not enough)."""

from __future__ import annotations

import pytest

import ember

BACKENDS = ["eager", "aot_eager"]


def _deeper(x, seen):
    scale = x.sum().item()  # a graph break
    seen.append(ember.is_grad_enabled())
    return x * scale


def _no_grad_around(fn):
    def wrapped(x, seen):
        with ember.no_grad():
            return fn(x * 2, seen) + 1

    return wrapped


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_break_inside_no_grad_keeps_grad_off(backend):
    ember._dynamo.reset()
    seen: list = []
    x = ember.ones(2, requires_grad=True)
    out = ember.compile(_no_grad_around(_deeper), backend=backend)(x, seen)
    assert seen == [False]
    assert not out.requires_grad
    assert ember.is_grad_enabled()


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "ASGD", "Adagrad", "RMSprop"])
def test_compiled_steps_of_optimizers_that_break_equal_eager(name):
    ember._dynamo.reset()
    ember.manual_seed(0)
    eager_model = ember.nn.Linear(4, 3)
    compiled_model = ember.nn.Linear(4, 3)
    compiled_model.load_state_dict(eager_model.state_dict())
    eager_opt = getattr(ember.optim, name)(eager_model.parameters(), lr=0.1)
    compiled_opt = getattr(ember.optim, name)(compiled_model.parameters(), lr=0.1)
    step = ember.compile(compiled_opt.step, backend="aot_eager")
    x = ember.randn(5, 4)
    for _ in range(3):
        for model, run in ((eager_model, eager_opt.step), (compiled_model, step)):
            model.zero_grad()
            model(x).square().sum().backward()
            run()
    for a, b in zip(eager_model.parameters(), compiled_model.parameters(), strict=True):
        assert ember.allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ember.is_grad_enabled()
