"""``ember.autograd.functional`` against ``torch.autograd.functional``: the same function, inputs
and vectors give the same values and the same nesting of results."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

X = [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]
Y = [0.2, 0.4, -0.3]


def _inputs(lib):
    return lib.tensor(X, dtype=lib.float64), lib.tensor(Y, dtype=lib.float64)


def _two_in_two_out(lib):
    return lambda a, b: ((a.sin() * b).sum(1) + a.pow(2).sum(), (a * b).tanh())


def _scalar_of_two(a, b):
    return (a.sin() * b).sum() + (a * a).sum() * b.sum()


def _flatten(result):
    if isinstance(result, tuple | list):
        return [("tuple", len(result))] + [x for r in result for x in _flatten(r)]
    return [np.asarray(result.detach().tolist())]


def _same(ours, theirs):
    a, b = _flatten(ours), _flatten(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple):
            assert x == y
        else:
            assert x.shape == y.shape
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def _both(call):
    return call(ember), call(torch)


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_reverse(vectorize):
    _same(*_both(lambda lib: lib.autograd.functional.jacobian(_two_in_two_out(lib), _inputs(lib), vectorize=vectorize)))


def test_jacobian_forward_mode():
    _same(
        *_both(
            lambda lib: lib.autograd.functional.jacobian(
                _two_in_two_out(lib), _inputs(lib), vectorize=True, strategy="forward-mode"
            )
        )
    )


def test_jacobian_single_tensor_in_and_out():
    _same(*_both(lambda lib: lib.autograd.functional.jacobian(lambda a: a.exp() * 2, _inputs(lib)[0])))


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian(vectorize):
    _same(*_both(lambda lib: lib.autograd.functional.hessian(_scalar_of_two, _inputs(lib), vectorize=vectorize)))
    _same(*_both(lambda lib: lib.autograd.functional.hessian(lambda a: (a.exp() * a).sum(), _inputs(lib)[0])))


def test_vjp_and_jvp():
    def vjp(lib):
        v = (lib.tensor([1.0, -2.0], dtype=lib.float64), lib.ones(2, 3, dtype=lib.float64))
        return lib.autograd.functional.vjp(_two_in_two_out(lib), _inputs(lib), v)

    def jvp(lib):
        a, b = _inputs(lib)
        return lib.autograd.functional.jvp(_two_in_two_out(lib), (a, b), (lib.ones_like(a), b * 3))

    _same(*_both(vjp))
    _same(*_both(jvp))


def test_hvp_and_vhp():
    for name in ("hvp", "vhp"):

        def call(lib, name=name):
            a, b = _inputs(lib)
            return getattr(lib.autograd.functional, name)(_scalar_of_two, (a, b), (a.cos(), b + 1))

        _same(*_both(call))


def test_create_graph_allows_a_second_derivative():
    def call(lib):
        x = lib.tensor([0.3, -0.8], dtype=lib.float64, requires_grad=True)
        _, grad = lib.autograd.functional.vjp(lambda t: (t**3).sum(), x, create_graph=True)
        (second,) = lib.autograd.grad(grad.sum(), x)
        return grad.requires_grad, second

    (ours_rg, ours), (theirs_rg, theirs) = _both(call)
    assert ours_rg is theirs_rg is True
    _same(ours, theirs)


def test_without_create_graph_results_are_detached():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    out, grad = ember.autograd.functional.vjp(lambda t: (t * t).sum(), x)
    assert not out.requires_grad and not grad.requires_grad
    assert x.grad is None


def test_strict_mode_errors_match():
    def call(lib):
        a, b = _inputs(lib)
        with pytest.raises(RuntimeError) as info:
            lib.autograd.functional.vjp(lambda p, q: p * 2, (a, b), lib.ones(2, 3, dtype=lib.float64), strict=True)
        return str(info.value)

    ours, theirs = _both(call)
    assert ours == theirs


def test_independent_input_gives_zeros_when_not_strict():
    _same(*_both(lambda lib: lib.autograd.functional.jacobian(lambda p, q: p * 2, _inputs(lib))))


def test_argument_errors_match():
    def call(lib):
        errors = []
        for bad in (
            lambda: lib.autograd.functional.vjp(lambda t: t * 2, _inputs(lib)[0]),
            lambda: lib.autograd.functional.jacobian(lambda t: t, [1.0]),
            lambda: lib.autograd.functional.jacobian(lambda t: t, _inputs(lib)[0], strategy="sideways"),
        ):
            with pytest.raises((RuntimeError, TypeError, AssertionError)) as info:
                bad()
            errors.append(type(info.value).__name__)
        return errors

    assert _both(call)[0] == _both(call)[1]
