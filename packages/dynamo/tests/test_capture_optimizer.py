"""Capture of optimizer steps: ``is_compiling``, dicts keyed by tensors, state made before tracing, hooks,
and AOT autograd's inference graphs that update inputs requiring grad."""

from __future__ import annotations

import numpy as np

import ember
import ember.nn as nn
from ember.aot.aot_autograd import aot_function
from ember.dynamo.testing import CompileCounter


def _same(a, b, tol=1e-6):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_is_compiling_is_true_in_the_graph_and_guards_nothing():
    counter = CompileCounter()

    def f(x):
        return x + 1 if ember.compiler.is_compiling() else x - 1

    compiled = ember.compile(f, backend=counter)
    for _ in range(3):
        _same(compiled(ember.ones(2)), ember.full((2,), 2.0))
    assert f(ember.ones(2)).tolist() == [0.0, 0.0]
    assert counter.frame_count == 1


def test_optimizer_is_compiling_mark():
    from ember.optim.optimizer import is_compiling

    counter = CompileCounter()
    compiled = ember.compile(lambda x: x * 2 if is_compiling() else x, backend=counter)
    _same(compiled(ember.ones(3)), ember.full((3,), 2.0))
    assert not is_compiling()


def test_dict_keyed_by_tensors():
    counter = CompileCounter()

    def f(d, a, b):
        return d[a] * 2 + d[b]["x"]

    a, b = ember.ones(2), ember.ones(3)
    d = {a: ember.ones(2), b: {"x": ember.full((2,), 5.0)}}
    compiled = ember.compile(f, backend=counter)
    _same(compiled(d, a, b), f(d, a, b))
    d[a] = ember.zeros(2)  # a value changed: read from the same source, no recompile
    _same(compiled(d, a, b), f(d, a, b))
    assert counter.frame_count == 1
    reordered = {b: d[b], a: d[a]}  # other key order: the guard fails, capture runs again
    _same(compiled(reordered, a, b), f(reordered, a, b))
    assert counter.frame_count == 2


def _params():
    ember.manual_seed(0)
    params = [nn.Parameter(ember.randn(4, 3)), nn.Parameter(ember.randn(3))]
    for p in params:
        p.grad = ember.randn(*p.shape)
    return params


def test_adam_state_is_made_before_tracing_and_steps_share_one_graph():
    counter = CompileCounter()
    eager, compiled = _params(), _params()
    eager_opt, opt = ember.optim.Adam(eager, lr=0.1), ember.optim.Adam(compiled, lr=0.1)
    step = ember.compile(opt.step, backend=counter)
    for _ in range(3):
        eager_opt.step()
        step()
    for p, q in zip(compiled, eager, strict=True):
        _same(p, q, tol=2e-5)  # the bias corrections: float32 tensors in the graph, Python floats in eager
        assert float(opt.state[p]["step"]) == 3.0
    assert counter.frame_count == 1


def test_step_hooks_run_and_a_compiled_function_may_call_step():
    params = _params()
    opt = ember.optim.SGD(params, lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    want = [p.detach() - 0.1 * p.grad for p in params]

    @ember.compile(backend="eager")
    def train_step():
        opt.step()

    train_step()
    assert calls == ["pre", "post"]
    for p, w in zip(params, want, strict=True):
        _same(p, w)


def test_inference_graph_may_update_inputs_that_require_grad():
    """Under no_grad (an optimizer's step), AOT autograd traces in-place updates of parameters."""

    def update(p, g):
        p.add_(g, alpha=-0.5)
        return p.sum()

    p = nn.Parameter(ember.ones(3))
    g = ember.full((3,), 2.0)
    compiled = aot_function(update, fw_compiler=lambda gm, inputs: gm)
    with ember.no_grad():
        total = compiled(p, g)
    assert p.tolist() == [0.0, 0.0, 0.0] and float(total) == 0.0
    assert p.requires_grad and p.grad_fn is None


def test_capture_does_not_import_the_optimizers():
    """Capture asks whether a value is an optimizer without importing ``ember.optim`` (none can be one
    before it is imported): a program that trains nothing does not load it."""
    import subprocess
    import sys

    code = (
        "import sys, ember\n"
        "ember.compile(lambda x, m: m(x).sin(), backend='eager')(ember.randn(2, 3), ember.nn.Linear(3, 2))\n"
        "print('ember.optim' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
