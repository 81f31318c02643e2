"""Linear algebra under autograd beyond the OpInfo sweeps: second-order tangents (forward over
reverse) against finite differences of the gradient, where PyTorch's own answer is not a reference
(its gradients carry no tangent, or a wrong one, without ``create_graph``), and the errors PyTorch
raises for gradients it does not define."""

from __future__ import annotations

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(0)
A = RNG.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)
TANGENT = RNG.standard_normal((3, 3))
B = RNG.standard_normal((3, 2))
COTANGENT = 0.7


def _gradient(f, a: np.ndarray) -> np.ndarray:
    x = ember.tensor(a).requires_grad_()
    (g,) = ember.autograd.grad(f(x), [x], ember.tensor(COTANGENT, dtype=ember.float64))
    return g.numpy()


def _gradient_tangent(f) -> np.ndarray:
    fw = ember.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(ember.tensor(A).requires_grad_(), ember.tensor(TANGENT))
        (g,) = ember.autograd.grad(f(x), [x], ember.tensor(COTANGENT, dtype=ember.float64))
        return fw.unpack_dual(g).tangent.numpy()


FUNCTIONS = {
    "det": lambda x: ember.linalg.det(x),
    "slogdet": lambda x: ember.linalg.slogdet(x).logabsdet,
    "logdet": lambda x: ember.logdet(x),
    "solve": lambda x: ember.linalg.solve(x, ember.tensor(B)).sum(),
    "solve_triangular": lambda x: ember.linalg.solve_triangular(x, ember.tensor(B), upper=True).sum(),
    "triangular_solve": lambda x: ember.triangular_solve(ember.tensor(B), x, upper=False).solution.sum(),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_forward_over_reverse_matches_finite_differences(name):
    f = FUNCTIONS[name]
    eps = 1e-6
    numerical = (_gradient(f, A + eps * TANGENT) - _gradient(f, A - eps * TANGENT)) / (2 * eps)
    np.testing.assert_allclose(_gradient_tangent(f), numerical, rtol=1e-6, atol=1e-7)


def test_qr_gradient_needs_q():
    x = ember.tensor(A).requires_grad_()
    _, R = ember.linalg.qr(x, mode="r")
    with pytest.raises(RuntimeError, match="mode='r'"):
        R.sum().backward()


def test_qr_complete_of_a_tall_matrix_is_not_differentiable():
    x = ember.tensor(RNG.standard_normal((4, 3))).requires_grad_()
    Q, R = ember.linalg.qr(x, mode="complete")
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        (Q.sum() + R.sum()).backward()
