"""The SVD's raw outputs against PyTorch: shapes, strides (column-major U and Vh), dtypes, empty
matrices, ``compute_uv=False`` and the meta device; and the factorization itself (U and Vh
orthonormal, ``U @ diag(S) @ Vh == A``), which holds whatever signs LAPACK picks."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
SHAPES = [(3, 4), (4, 3), (3, 3), (2, 3, 4), (2, 4, 3), (1, 1), (0, 3), (3, 0), (2, 0, 0), (2, 0, 3)]


def _layout(outputs) -> list:
    return [(tuple(t.shape), t.stride(), str(t.dtype).split(".")[-1]) for t in outputs]


@needs_torch
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_layout_matches_pytorch(shape, full_matrices, dtype):
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    ours = ember.linalg.svd(ember.tensor(a), full_matrices=full_matrices)
    theirs = torch.linalg.svd(torch.tensor(a), full_matrices=full_matrices)
    assert _layout(ours) == _layout(theirs)
    np.testing.assert_allclose(ours.S.numpy(), theirs.S.numpy(), rtol=1e-5, atol=1e-6)
    meta = ember.linalg.svd(ember.empty(shape, dtype=getattr(ember, dtype), device="meta"), full_matrices)
    assert _layout(meta) == _layout(theirs)
    if 0 in shape:  # the identities PyTorch gives for empty matrices
        np.testing.assert_array_equal(ours.U.numpy(), theirs.U.numpy())
        np.testing.assert_array_equal(ours.Vh.numpy(), theirs.Vh.numpy())


@needs_torch
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (0, 2)])
def test_without_vectors(shape):
    a = np.random.default_rng(1).standard_normal(shape)
    ours = ember.ops.aten._linalg_svd.default(ember.tensor(a), False, False)
    theirs = torch.ops.aten._linalg_svd.default(torch.tensor(a), False, False)
    assert _layout(ours) == _layout(theirs)
    np.testing.assert_allclose(ours[1].numpy(), theirs[1].numpy(), rtol=1e-12)
    assert _layout([ember.linalg.svdvals(ember.tensor(a))]) == _layout([torch.linalg.svdvals(torch.tensor(a))])


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_factorization(shape, full_matrices):
    a = np.random.default_rng(2).standard_normal(shape)
    U, S, Vh = (t.numpy() for t in ember.linalg.svd(ember.tensor(a), full_matrices=full_matrices))
    k = S.shape[-1]
    np.testing.assert_allclose((U[..., :k] * S[..., None, :]) @ Vh[..., :k, :], a, atol=1e-12)
    np.testing.assert_allclose(
        np.swapaxes(U, -1, -2) @ U, np.broadcast_to(np.eye(U.shape[-1]), U.shape[:-2] + (U.shape[-1],) * 2), atol=1e-12
    )
    np.testing.assert_allclose(
        Vh @ np.swapaxes(Vh, -1, -2),
        np.broadcast_to(np.eye(Vh.shape[-2]), Vh.shape[:-2] + (Vh.shape[-2],) * 2),
        atol=1e-12,
    )
    assert np.all(np.diff(S, axis=-1) <= 0)


def test_result_is_a_named_tuple_and_arguments_are_checked():
    result = ember.linalg.svd(ember.eye(2))
    assert type(result).__name__ == "linalg_svd" and result._fields == ("U", "S", "Vh")
    with pytest.raises(TypeError, match="full_matrices"):
        ember.linalg.svd(ember.eye(2), full_matrices=1)
    with pytest.raises(NotImplementedError, match="out="):
        ember.linalg.svd(ember.eye(2), out=(ember.empty(0), ember.empty(0), ember.empty(0)))
