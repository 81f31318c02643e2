"""``ember.linalg``'s errors and PyTorch's older top-level conventions, without the oracle."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def test_lin_alg_error_is_a_runtime_error_named_as_pytorchs():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    assert ember.linalg.LinAlgError.__module__ == "ember.linalg"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ember.linalg.inv(ember.zeros(3, 3)), r"^linalg\.inv: The diagonal element 1 is zero"),
        (lambda: ember.linalg.inv(ember.stack([ember.eye(2), ember.zeros(2, 2)])), r"\(Batch element 1\)"),
        (lambda: ember.linalg.cholesky(-ember.eye(3)), "leading minor of order 1 is not positive-definite"),
        (lambda: ember.linalg.solve(ember.zeros(2, 2), ember.ones(2)), "input matrix is singular"),
    ],
)
def test_singular_and_indefinite_inputs_raise_lin_alg_error(call, match):
    with pytest.raises(ember.linalg.LinAlgError, match=match):
        call()


def test_ex_forms_report_info_instead_of_raising():
    _, info = ember.linalg.inv_ex(ember.stack([ember.eye(2), ember.zeros(2, 2)]))
    assert info.tolist() == [0, 1]
    L, info = ember.linalg.cholesky_ex(ember.tensor([[4.0, 2.0], [2.0, -3.0]]))
    assert info.item() == 2
    np.testing.assert_allclose(L.numpy()[0, 0], 2.0)


def test_lu_factor_pivots_are_lapacks():
    A = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    _, pivots = ember.linalg.lu_factor(A)
    assert pivots.dtype == ember.int32 and pivots.tolist() == [2, 2]
    P, L, U = ember.linalg.lu(A)
    np.testing.assert_allclose((P @ L @ U).numpy(), A.numpy(), rtol=1e-6)


def test_removed_functions_raise_pytorchs_message():
    for name in ("solve", "lstsq", "eig", "symeig", "matrix_rank"):
        with pytest.raises(RuntimeError, match=r"deprecated since version 1\.9 and is now removed"):
            getattr(ember, name)(ember.eye(2))


def test_legacy_svd_without_vectors_gives_zero_filled_u_and_v():
    U, S, V = ember.svd(ember.ones(3, 2), compute_uv=False)
    assert tuple(U.shape) == (3, 3) and tuple(V.shape) == (2, 2)
    assert not U.any() and not V.any()
    np.testing.assert_allclose(S.numpy(), [np.sqrt(6), 0], atol=1e-6)


def test_matrix_power_zero_is_the_identity_and_keeps_a_gradient_path():
    A = ember.ones(2, 2, requires_grad=True)
    result = ember.linalg.matrix_power(A, 0)
    assert result.requires_grad
    np.testing.assert_array_equal(result.detach().numpy(), np.eye(2))
