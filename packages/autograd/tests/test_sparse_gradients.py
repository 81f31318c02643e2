"""Gradients through sparse COO tensors against PyTorch: the layout of each gradient (sparse where
PyTorch's is) and its values, for ``to_dense``, the constructor's values, ``sparse.mm``/``addmm``,
``sparse.sum``, the sparse softmaxes, arithmetic, and a leaf's accumulated ``.grad``."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

INDICES = np.array([[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]])  # (0, 2) twice: uncoalesced
VALUES = np.array([3.0, -4.0, 5.0, 1.0, 0.5], np.float32)
SHAPE = (3, 3)


def leaves(indices=INDICES, values=VALUES, shape=SHAPE, coalesce=False):
    ours = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), shape)
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), shape)
    if coalesce:
        ours, theirs = ours.coalesce(), theirs.coalesce()
    return ours.requires_grad_(), theirs.requires_grad_()


def assert_grad(ours, theirs, atol=1e-5):
    assert ours is not None and theirs is not None
    assert ours.is_sparse == theirs.is_sparse, f"layouts differ: ours sparse={ours.is_sparse}"
    if ours.is_sparse:
        o, t = ours.coalesce(), theirs.coalesce()
        np.testing.assert_array_equal(o.indices().numpy(), t.indices().numpy())
        np.testing.assert_allclose(o.values().numpy(), t.values().numpy(), atol=atol)
    else:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=atol)


WEIGHT = np.arange(9, dtype=np.float32).reshape(3, 3) / 7 - 0.5
MAT = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)


@pytest.mark.parametrize("coalesce", [False, True])
def test_to_dense(coalesce):
    ours, theirs = leaves(coalesce=coalesce)
    (ours.to_dense() * ember.tensor(WEIGHT)).sum().backward()
    (theirs.to_dense() * torch.tensor(WEIGHT)).sum().backward()
    assert_grad(ours.grad, theirs.grad)


def test_constructor_values_get_the_gradient_at_their_indices():
    v_o, v_t = ember.tensor(VALUES, requires_grad=True), torch.tensor(VALUES, requires_grad=True)
    s_o = ember.sparse_coo_tensor(ember.tensor(INDICES), v_o, SHAPE)
    s_t = torch.sparse_coo_tensor(torch.tensor(INDICES), v_t, SHAPE)
    assert s_o.requires_grad and s_o.grad_fn is not None
    (s_o.to_dense() ** 2 * ember.tensor(WEIGHT)).sum().backward()
    (s_t.to_dense() ** 2 * torch.tensor(WEIGHT)).sum().backward()
    assert_grad(v_o.grad, v_t.grad)


def test_hybrid_constructor_values():
    values = np.linspace(-2, 2, 10, dtype=np.float32).reshape(5, 2)
    v_o, v_t = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    indices = INDICES[:1]
    s_o = ember.sparse_coo_tensor(ember.tensor(indices), v_o, (3, 2))
    s_t = torch.sparse_coo_tensor(torch.tensor(indices), v_t, (3, 2))
    (s_o.to_dense() * ember.tensor(WEIGHT[:, :2])).sum().backward()
    (s_t.to_dense() * torch.tensor(WEIGHT[:, :2])).sum().backward()
    assert_grad(v_o.grad, v_t.grad)


@pytest.mark.parametrize("coalesce", [False, True])
def test_sparse_mm(coalesce):
    ours, theirs = leaves(coalesce=coalesce)
    m_o, m_t = ember.tensor(MAT, requires_grad=True), torch.tensor(MAT, requires_grad=True)
    (ember.sparse.mm(ours, m_o) * ember.tensor(MAT)).sum().backward()
    (torch.sparse.mm(theirs, m_t) * torch.tensor(MAT)).sum().backward()
    assert_grad(ours.grad, theirs.grad)
    assert_grad(m_o.grad, m_t.grad)


def test_hspmm_has_no_derivative_in_either():
    ours, theirs = leaves()
    with pytest.raises(RuntimeError) as expected:
        torch.hspmm(theirs, torch.tensor(MAT)).to_dense().sum().backward()
    with pytest.raises(RuntimeError) as got:
        ember.hspmm(ours, ember.tensor(MAT)).to_dense().sum().backward()
    assert str(got.value) == str(expected.value)


def test_mm_of_a_sparse_matrix_has_a_dense_gradient_as_in_pytorch():
    ours, theirs = leaves()
    m_o, m_t = ember.tensor(MAT, requires_grad=True), torch.tensor(MAT, requires_grad=True)
    (ember.mm(ours, m_o) ** 2).sum().backward()
    (torch.mm(theirs, m_t) ** 2).sum().backward()
    assert_grad(ours.grad, theirs.grad)
    assert_grad(m_o.grad, m_t.grad)


def test_sparse_addmm():
    ours, theirs = leaves()
    b_o, b_t = ember.tensor(MAT * 3, requires_grad=True), torch.tensor(MAT * 3, requires_grad=True)
    m_o, m_t = ember.tensor(MAT, requires_grad=True), torch.tensor(MAT, requires_grad=True)
    (ember.sparse.addmm(b_o, ours, m_o, beta=0.5, alpha=2.0) ** 2).sum().backward()
    (torch.sparse.addmm(b_t, theirs, m_t, beta=0.5, alpha=2.0) ** 2).sum().backward()
    for o, t in ((ours, theirs), (b_o, b_t), (m_o, m_t)):
        assert_grad(o.grad, t.grad)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_sparse_sum(dim):
    ours, theirs = leaves()
    args = () if dim is None else (dim,)
    out_o, out_t = ember.sparse.sum(ours, *args), torch.sparse.sum(theirs, *args)
    assert out_o.is_sparse == out_t.is_sparse
    weight = np.linspace(1, 2, out_t.numel(), dtype=np.float32).reshape(tuple(out_t.shape))
    ((out_o.to_dense() if out_o.is_sparse else out_o) * ember.tensor(weight)).sum().backward()
    ((out_t.to_dense() if out_t.is_sparse else out_t) * torch.tensor(weight)).sum().backward()
    assert_grad(ours.grad, theirs.grad)


def test_sparse_sum_of_a_hybrid_tensor():
    values = np.linspace(-2, 2, 10, dtype=np.float32).reshape(5, 2)
    ours, theirs = leaves(INDICES, values, (3, 3, 2))
    for dim in (1, 2, (0, 2)):
        ours.grad = theirs.grad = None
        o, t = ember.sparse.sum(ours, dim), torch.sparse.sum(theirs, dim)
        weight = np.linspace(1, 2, t.numel(), dtype=np.float32).reshape(tuple(t.shape))
        ((o.to_dense() if o.is_sparse else o) * ember.tensor(weight)).sum().backward()
        ((t.to_dense() if t.is_sparse else t) * torch.tensor(weight)).sum().backward()
        assert_grad(ours.grad, theirs.grad)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax(fn, dim):
    ours, theirs = leaves()
    o = getattr(ember.sparse, fn)(ours, dim)
    t = getattr(torch.sparse, fn)(theirs, dim)
    (o.to_dense() * ember.tensor(WEIGHT)).sum().backward()
    (t.to_dense() * torch.tensor(WEIGHT)).sum().backward()
    assert_grad(ours.grad, theirs.grad)


def test_arithmetic_keeps_gradients_sparse():
    ours, theirs = leaves()
    ((ours * 2 - ours.t() * 0.5).to_dense() * ember.tensor(WEIGHT)).sum().backward()
    ((theirs * 2 - theirs.t() * 0.5).to_dense() * torch.tensor(WEIGHT)).sum().backward()
    assert_grad(ours.grad, theirs.grad)


def test_values_of_a_coalesced_tensor():
    ours, theirs = leaves(coalesce=True)
    o, t = ours.coalesce(), theirs.coalesce()
    (o.values() ** 2).sum().backward()
    (t.values() ** 2).sum().backward()
    assert_grad(ours.grad, theirs.grad)


def test_gradients_accumulate_across_backward_calls():
    ours, theirs = leaves()
    for _ in range(2):
        ember.sparse.sum(ours).backward()
        torch.sparse.sum(theirs).backward()
    assert_grad(ours.grad, theirs.grad)
    # A dense gradient arriving at a sparse .grad makes it dense, in both.
    ember.mm(ours, ember.tensor(MAT)).sum().backward()
    torch.mm(theirs, torch.tensor(MAT)).sum().backward()
    assert_grad(ours.grad, theirs.grad)


def test_dense_leaf_gets_a_sparse_gradient_added_in_place():
    d_o, d_t = ember.tensor(WEIGHT, requires_grad=True), torch.tensor(WEIGHT, requires_grad=True)
    s_o, s_t = leaves()
    s_o, s_t = s_o.detach(), s_t.detach()
    (d_o * 2).sum().backward()
    (d_t * 2).sum().backward()
    (d_o.sparse_mask(s_o.coalesce()).to_dense()).sum().backward()
    (d_t.sparse_mask(s_t.coalesce()).to_dense()).sum().backward()
    assert_grad(d_o.grad, d_t.grad)
