"""The check mode, ``options={"check": True}``: every node's compiled value against eager's."""

from __future__ import annotations

import pytest

import ember
from ember.inductor import lowering
from ember.inductor.check import AccuracyError
from ember.inductor.virtualized import ops


@pytest.fixture(autouse=True)
def fresh_compiles():
    ember.compiler.reset()
    yield
    ember.compiler.reset()


def program(x, y):
    a = x * y + 1
    b = a.exp()  # the line the check names
    return (b.sum(1) + y.sum(1)).relu()


def _broken_exp(ctx, x):
    # exp(x) + 1: wrong, and only for this node
    dt = lowering.compute_dtype(ctx.out_dtype)
    return lowering.pointwise(ctx, [x], lambda v: ops.add(ops.exp(v), ops.constant(1.0, dt)))


def test_check_mode_passes_correct_code_and_returns_its_results():
    x, y = ember.randn(4, 6), ember.randn(4, 6)
    compiled = ember.compile(program, options={"check": True})
    got = compiled(x, y)
    assert ember.allclose(got, program(x, y), rtol=1e-5, atol=1e-5)


def test_check_mode_names_the_first_wrong_node_and_the_users_line(monkeypatch):
    monkeypatch.setitem(lowering.LOWERINGS, ember.ops.aten.exp.default, _broken_exp)
    x, y = ember.randn(4, 6), ember.randn(4, 6)
    compiled = ember.compile(program, options={"check": True})
    with pytest.raises(AccuracyError) as info:
        compiled(x, y)
    message = str(info.value)
    assert "at node exp (aten.exp.default)" in message
    assert "b = a.exp()  # the line the check names" in message
    assert "test_check_mode.py" in message
    # without the check, the same broken code runs silently
    ember.compiler.reset()
    wrong = ember.compile(program)(x, y)
    assert not ember.allclose(wrong, program(x, y))


def test_check_mode_checks_the_backward_graph(monkeypatch):
    x = ember.randn(5, 3, requires_grad=True)

    def fn(t):
        return (t * 3).exp().sum()

    compiled = ember.compile(fn, options={"check": True})
    compiled(x).backward()  # correct code: no error
    assert ember.allclose(x.grad, (x * 3).exp() * 3, rtol=1e-5)
    ember.compiler.reset()
    monkeypatch.setitem(lowering.LOWERINGS, ember.ops.aten.exp.default, _broken_exp)
    compiled = ember.compile(fn, options={"check": True})
    with pytest.raises(AccuracyError, match="exp"):
        compiled(x)


def test_check_mode_with_random_ops_compares_the_same_draws():
    compiled = ember.compile(lambda t: t + ember.rand_like(t) * ember.randn_like(t), options={"check": True})
    ember.manual_seed(0)
    got = compiled(ember.zeros(100))
    ember.manual_seed(0)
    t = ember.zeros(100)
    want = t + ember.rand_like(t) * ember.randn_like(t)
    assert ember.allclose(got, want, rtol=1e-5, atol=1e-5)
    assert ember.default_generator.get_offset() == 200


def test_unknown_options_still_raise():
    from ember.dynamo.exc import BackendCompilerFailed

    with pytest.raises(BackendCompilerFailed, match="options\\['epilogue_fusion'\\] is not built yet"):
        ember.compile(program, options={"epilogue_fusion": True})(ember.randn(2, 2), ember.randn(2, 2))
