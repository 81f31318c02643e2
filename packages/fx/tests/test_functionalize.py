"""``ember.func.functionalize`` and ``FunctionalTensorMode`` without an oracle: composition with
``grad``, ``vmap`` and ``make_fx`` (fake and symbolic), nesting, the mode, and the errors.

Every value is compared with the same program run eagerly (its input mutations included).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
from ember._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from ember.func import functional_call, functionalize, grad, vmap
from ember.fx.experimental.proxy_tensor import make_fx


def _same(a, b) -> None:
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def _loss(x):
    y = x.clone()
    y.view(-1)[1:3].mul_(2)  # a mutation through a chain of views of an intermediate
    y.t().add_(x.t())
    y.unsqueeze(0).squeeze(0)[0].sub_(1)
    return (y * y).sum()


def _inputs():
    return ember.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=ember.float32)


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_grad_of_functionalize_and_back(remove):
    x = _inputs()
    expected = grad(_loss)(x)
    _same(grad(functionalize(_loss, remove=remove))(x), expected)
    _same(functionalize(grad(_loss), remove=remove)(x), expected)


def test_backward_inside_functionalize_sees_functional_ops():
    x = _inputs().requires_grad_()

    def f(x):
        y = x * 1
        y[0].mul_(3)
        return y.sum()

    functionalize(f)(x).backward()
    expected = ember.ones(3, 4)
    expected[0] = 3
    _same(x.grad, expected)


def _mutating(x):
    y = x * 2
    y[0].add_(1)
    y.t_()
    x.add_(y.t())
    return y


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_vmap_and_functionalize_compose(remove):
    x = _inputs()
    eager_x = x.clone()
    expected = vmap(_mutating)(eager_x)
    for transform in (lambda f: vmap(functionalize(f, remove=remove)), lambda f: functionalize(vmap(f), remove=remove)):
        x_ = x.clone()
        _same(transform(_mutating)(x_), expected)
        _same(x_, eager_x)


def test_vmap_of_grad_of_functionalize():
    x = _inputs()
    per_row = ember.stack([grad(_loss_row)(row) for row in x])
    _same(vmap(grad(functionalize(_loss_row)))(x), per_row)
    _same(vmap(grad(functionalize(_loss_row, remove="mutations_and_views")))(x), per_row)


def _loss_row(row):
    r = row.clone()
    r[1:].mul_(row[:-1])
    return r.sum()


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@pytest.mark.parametrize("tracing_mode", ["fake", "symbolic"])
def test_make_fx_fake_and_symbolic(tracing_mode, remove):
    def f(x):
        x.view(-1)[1:3].add_(1)
        x.t()[0].mul_(2)
        return x.transpose(0, 1) + x.shape[0]

    gm = make_fx(functionalize(f, remove=remove), tracing_mode=tracing_mode)(_inputs())
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function" and hasattr(n.target, "tags")]
    assert [t for t in targets if t.schema.is_mutable] == [ember.ops.aten.copy_.default]
    x, x_eager = _inputs(), _inputs()
    _same(gm(x), f(x_eager))
    _same(x, x_eager)


def test_nested_functionalize():
    def f(x):
        x.mul_(2)
        return x + 1

    x = ember.ones(2)
    _same(functionalize(functionalize(f))(x), ember.full((2,), 3.0))
    _same(x, ember.full((2,), 2.0))
    gm = make_fx(functionalize(functionalize(f)))(ember.ones(2))
    mutating = [n.target for n in gm.graph.nodes if n.op == "call_function" and n.target.schema.is_mutable]
    assert mutating == [ember.ops.aten.copy_.default]


def test_module_state_through_functional_call():
    bn = ember.nn.BatchNorm1d(4)
    state = {**dict(bn.named_parameters()), **dict(bn.named_buffers())}
    twin = ember.nn.BatchNorm1d(4)
    x = _inputs()
    expected = twin(x)
    out = functionalize(lambda x, state: functional_call(bn, state, (x,)))(x, state)
    _same(out, expected)
    _same(bn.running_mean, twin.running_mean)
    _same(bn.running_var, twin.running_var)
    assert int(bn.num_batches_tracked) == 1


def test_functional_tensor_mode():
    x = ember.ones(3)
    with FunctionalTensorMode():
        a = FunctionalTensor.to_functional(x)
        a.view(3).add_(2)
        made = ember.zeros(2)
        assert isinstance(a, FunctionalTensor) and isinstance(made, FunctionalTensor)
        assert a.sum().item() == 9.0
        _same(a.from_functional(), ember.full((3,), 3.0))
    _same(x, ember.ones(3))  # the mode does not write back: functionalize() does
    with pytest.raises(RuntimeError, match="outside the functionalization"):
        a + 1


def test_errors():
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        functionalize(lambda x: x, remove="views")
    captured = ember.zeros(3)

    def f(x):
        captured.add_(x)
        return x

    with pytest.raises(RuntimeError, match="mutating a non-functional tensor with a functional tensor"):
        functionalize(f)(ember.ones(3))


def test_missing_fx_is_named(monkeypatch):
    from ember.autograd import _providers

    monkeypatch.setattr(_providers, "_functionalize", None)
    with pytest.raises(RuntimeError, match=r"ember\.fx"):
        functionalize(lambda x: x)


def test_torch_path():
    import ember._subclasses.functional_tensor as module

    assert ember.func.functionalize is functionalize
    assert module.FunctionalTensorMode is FunctionalTensorMode


def test_tensors_made_inside_are_functional():
    def f(x):
        c = ember.tensor([1.0, 2.0])
        c.mul_(x)
        z = ember.zeros(2)
        z.add_(c)
        return z

    x = ember.full((2,), 3.0)
    _same(functionalize(f)(x), ember.tensor([3.0, 6.0]))
    gm = make_fx(functionalize(f))(x)
    assert not [n for n in gm.graph.nodes if n.op == "call_function" and n.target.schema.is_mutable]
    _same(gm(x), ember.tensor([3.0, 6.0]))


def test_importing_fx_defines_no_dispatching_subclass():
    import subprocess

    code = (
        "import ember, ember.fx, sys; from ember.core.dispatch import _flags; "
        "assert not _flags.subclasses and 'ember._subclasses.functional_tensor' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_works_after_import_ember_alone():
    import subprocess

    code = (
        "import ember\n"
        "x = ember.zeros(2)\n"
        "out = ember.func.functionalize(lambda x: x.add_(1) * 2)(x)\n"
        "assert out.tolist() == [2.0, 2.0] and x.tolist() == [1.0, 1.0]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
