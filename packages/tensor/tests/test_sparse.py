"""Sparse COO tensors without an oracle: every value against a dense NumPy computation of the same
thing, so that these run where PyTorch is not installed (Python 3.12, 3.13)."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember


def pieces(seed: int, sparse_shape=(4, 5), dense_shape=(), nnz=8):
    rng = np.random.default_rng(seed)
    indices = np.stack([rng.integers(0, n, nnz) for n in sparse_shape]).reshape(len(sparse_shape), nnz)
    values = rng.standard_normal((nnz, *dense_shape)).astype(np.float32)
    return indices.astype(np.int64), values


def dense_np(indices, values, shape):
    out = np.zeros(shape, values.dtype)
    np.add.at(out, tuple(indices), values)
    return out


@pytest.fixture(params=[(0, (4, 5), (), 8), (1, (4, 5), (), 0), (2, (6,), (3,), 5), (3, (2, 3, 4), (), 11)])
def case(request):
    seed, sparse_shape, dense_shape, nnz = request.param
    indices, values = pieces(seed, sparse_shape, dense_shape, nnz)
    shape = (*sparse_shape, *dense_shape)
    s = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), shape)
    return s, dense_np(indices, values, shape)


def test_to_dense_sums_duplicates(case):
    s, expected = case
    np.testing.assert_allclose(s.to_dense().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_coalesce_is_sorted_unique_and_keeps_the_values(case):
    s, expected = case
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    idx = c.indices().numpy()
    flat = np.ravel_multi_index(tuple(idx), s.shape[: s.sparse_dim()]) if idx.shape[1] else idx[0]
    assert np.all(np.diff(flat) > 0)
    np.testing.assert_allclose(c.to_dense().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_round_trip_through_dense(case):
    s, expected = case
    back = ember.tensor(expected).to_sparse(s.sparse_dim())
    assert back.is_coalesced() and back.sparse_dim() == s.sparse_dim() and back.dense_dim() == s.dense_dim()
    np.testing.assert_array_equal(back.to_dense().numpy(), expected)


def test_pointwise_and_linear_ops(case):
    s, expected = case
    np.testing.assert_allclose((s * 3).to_dense().numpy(), expected * 3, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((-s / 2).to_dense().numpy(), -expected / 2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.abs().sqrt().to_dense().numpy(), np.sqrt(np.abs(expected)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.sin().to_dense().numpy(), np.sin(expected), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((s + s).to_dense().numpy(), 2 * expected, rtol=1e-5, atol=1e-6)
    dense = np.full(s.shape, 0.5, np.float32)
    np.testing.assert_allclose((ember.tensor(dense) + s).numpy(), dense + expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((s * ember.tensor(dense)).to_dense().numpy(), expected * 0.5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((s * s).to_dense().numpy(), expected * expected, rtol=1e-5)


def test_sums(case):
    s, expected = case
    np.testing.assert_allclose(ember.sparse.sum(s).item(), expected.sum(), rtol=1e-5)
    for dim in range(s.ndim):
        out = ember.sparse.sum(s, dim)
        got = out.to_dense() if out.is_sparse else out
        np.testing.assert_allclose(got.numpy(), expected.sum(axis=dim), rtol=1e-5, atol=1e-6)


def test_matrix_products():
    indices, values = pieces(4)
    s = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), (4, 5))
    a = dense_np(indices, values, (4, 5))
    m = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    np.testing.assert_allclose(ember.sparse.mm(s, ember.tensor(m)).numpy(), a @ m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((s @ ember.tensor(m)).numpy(), a @ m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((ember.tensor(m.T) @ s.t()).numpy(), m.T @ a.T, rtol=1e-5, atol=1e-6)
    bias = np.ones((4, 3), np.float32)
    got = ember.sparse.addmm(ember.tensor(bias), s, ember.tensor(m), beta=2, alpha=0.5)
    np.testing.assert_allclose(got.numpy(), 2 * bias + 0.5 * (a @ m), rtol=1e-5, atol=1e-6)


def test_sparse_softmax_ignores_unstored_elements():
    s = ember.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [1.0, 2.0, 3.0], (2, 3))
    out = ember.sparse.softmax(s, 1).to_dense().numpy()
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(out[0], [e[0] / e.sum(), 0, e[1] / e.sum()], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], [0, 1, 0], rtol=1e-5, atol=1e-6)


def test_unsupported_ops_refuse_rather_than_compute_on_missing_data():
    s = ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,))
    for call in (lambda: s.exp(), lambda: s.cumsum(0), lambda: s.view(3), lambda: s + 1):
        with pytest.raises((NotImplementedError, RuntimeError)):
            call()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::exp' with arguments from the 'SparseCPU'"):
        s.exp()


def test_pickle_and_save_round_trips():
    s = ember.sparse_coo_tensor([[0, 2, 0]], [1.0, 2.0, 3.0], (3,))
    again = pickle.loads(pickle.dumps(s))
    assert not again.is_coalesced()
    np.testing.assert_array_equal(again.to_dense().numpy(), [4.0, 0.0, 2.0])
    buffer = io.BytesIO()
    ember.save({"s": s}, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer)["s"]
    assert loaded.is_sparse and not loaded.is_coalesced()
    np.testing.assert_array_equal(loaded._indices().numpy(), [[0, 2, 0]])


def test_dense_fast_path_is_untouched_until_a_sparse_tensor_exists():
    code = (
        "import ember\n"
        "from ember.core import dispatch\n"
        "assert not dispatch._flags.subclasses, 'importing ember leaves the fast path'\n"
        "ember.ones(2).to_sparse()\n"
        "assert dispatch._flags.subclasses\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
