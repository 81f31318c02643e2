"""Sparse COO tensors against PyTorch: construction and its errors, coalescing, conversions, hybrid
tensors, every op of the sparse kernel table on random inputs (with duplicates, and empty), the
errors of ops without a sparse kernel, printing, and saving.

Both libraries get the same indices and values from one NumPy generator; results are compared as
their indices, values and flags, or as dense arrays where PyTorch's choice of indices for a result
is an implementation detail.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def random_pieces(rng, sparse_shape, dense_shape=(), nnz=5, dtype=np.float32):
    indices = np.stack([rng.integers(0, n, nnz) for n in sparse_shape]).astype(np.int64).reshape(len(sparse_shape), nnz)
    values = rng.standard_normal((nnz, *dense_shape)).astype(dtype)
    return indices, values


def both(indices, values, size, **kwargs):
    ours = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), size, **kwargs)
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size, **kwargs)
    return ours, theirs


def dense_of(t) -> np.ndarray:
    t = t.detach()
    return (t.to_dense() if t.is_sparse else t).numpy()


def assert_same(ours, theirs, *, atol=1e-6, exact_indices=False):
    assert ours.is_sparse == theirs.is_sparse
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    if ours.is_sparse:
        assert ours.sparse_dim() == theirs.sparse_dim() and ours.dense_dim() == theirs.dense_dim()
        if exact_indices:
            assert ours.is_coalesced() == theirs.is_coalesced()
            np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
            np.testing.assert_allclose(ours._values().numpy(), theirs._values().numpy(), atol=atol)
    np.testing.assert_allclose(dense_of(ours), dense_of(theirs), atol=atol, rtol=1e-5)


CASES = [  # (sparse shape, dense shape, nnz)
    ((4, 5), (), 7),
    ((4, 5), (), 1),
    ((4, 5), (), 0),
    ((3, 2, 4), (), 9),
    ((6,), (3,), 5),
    ((3, 4), (2,), 6),
]


@pytest.fixture(params=CASES, ids=lambda c: f"{c[0]}x{c[1]}-nnz{c[2]}")
def pair(request):
    sparse_shape, dense_shape, nnz = request.param
    rng = np.random.default_rng(abs(hash(request.param)) % 2**32)
    indices, values = random_pieces(rng, sparse_shape, dense_shape, nnz)
    return both(indices, values, (*sparse_shape, *dense_shape))


# -- construction --------------------------------------------------------------------------------------


def test_construction_and_metadata(pair):
    ours, theirs = pair
    assert_same(ours, theirs, exact_indices=True)
    assert ours.layout is ember.sparse_coo and ours.is_sparse and not ember.ones(1).is_sparse
    assert ours._nnz() == theirs._nnz()


def test_size_is_inferred_from_indices_and_values():
    indices = np.array([[0, 3, 1], [2, 0, 4]])
    values = np.ones((3, 2), np.float32)
    ours = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values))
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values))
    assert tuple(ours.shape) == tuple(theirs.shape)
    ours = ember.sparse_coo_tensor([[0, 1]], [1, 2])
    theirs = torch.sparse_coo_tensor([[0, 1]], [1, 2])
    assert str(ours.dtype) == str(theirs.dtype).replace("torch", "ember")


def test_dtype_and_requires_grad_options():
    ours, theirs = both([[0, 2]], np.array([1.0, 2.0], np.float32), (3,), dtype=None)
    o = ember.sparse_coo_tensor(ours._indices(), ours._values(), (3,), dtype=ember.float64, requires_grad=True)
    t = torch.sparse_coo_tensor(theirs._indices(), theirs._values(), (3,), dtype=torch.float64, requires_grad=True)
    assert o.requires_grad and t.requires_grad and o.is_leaf and t.is_leaf
    assert_same(o, t)


BAD = [
    (np.array([0, 1]), np.array([1.0, 2.0]), (3,), {}),
    (np.array([[0, 1]]), np.array([1.0, 2.0, 3.0]), (3,), {}),
    (np.array([[0, 1]]), np.array([1.0, 2.0]), (3, 4), {}),
    (np.array([[0, 1]]), np.array([[1.0, 2.0]]).T, (3, 4), {}),
    (np.array([[[0, 1]]]), np.array([1.0, 2.0]), (3,), {}),
    (np.array([[0, 1]]), np.array([[1.0, 2.0], [3.0, 4.0]]), (3,), {}),
    (np.array([[0, 5]]), np.array([1.0, 2.0]), (3,), {"check_invariants": True}),
    (np.array([[0, -1]]), np.array([1.0, 2.0]), (3,), {"check_invariants": True}),
    (np.array([[0, -1]]), np.array([1.0, 2.0]), None, {}),
    (np.array([[1, 0]]), np.array([1.0, 2.0]), (2,), {"check_invariants": True, "is_coalesced": True}),
]


@pytest.mark.parametrize("indices, values, size, kwargs", BAD)
def test_construction_errors(indices, values, size, kwargs):
    sized = () if size is None else (size,)
    with pytest.raises(Exception) as expected:
        torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), *sized, **kwargs)
    with pytest.raises(type(expected.value)) as got:
        ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), *sized, **kwargs)
    assert str(got.value) == str(expected.value).split("\n")[0]


def test_out_of_bounds_indices_are_refused_even_without_invariant_checks():
    # PyTorch accepts these and reads out of bounds later; Ember refuses them at once, in its words.
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size is 3 but found index 5"):
        ember.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))


def test_is_coalesced_flags():
    for nnz in (0, 1, 2):
        ours, theirs = both(np.zeros((1, nnz), np.int64), np.ones(nnz, np.float32), (3,))
        assert ours.is_coalesced() == theirs.is_coalesced()
    ours, theirs = both([[0, 1]], np.ones(2, np.float32), (3,), is_coalesced=True)
    assert ours.is_coalesced() and theirs.is_coalesced()


def test_dense_tensors_refuse_sparse_only_methods():
    for name in ("is_coalesced", "indices", "values", "coalesce"):
        with pytest.raises(RuntimeError) as expected:
            getattr(torch.ones(2), name)()
        with pytest.raises(RuntimeError) as got:
            getattr(ember.ones(2), name)()
        assert str(got.value) == str(expected.value)
    for name in ("_nnz", "_indices", "_values"):
        with pytest.raises(NotImplementedError) as expected:
            getattr(torch.ones(2), name)()
        with pytest.raises(NotImplementedError) as got:
            getattr(ember.ones(2), name)()
        assert str(expected.value).startswith(str(got.value))
    assert ember.ones(2, 3).sparse_dim() == torch.ones(2, 3).sparse_dim()
    assert ember.ones(2, 3).dense_dim() == torch.ones(2, 3).dense_dim()
    assert ember.ones(2).to_dense() is not None


def test_indices_and_values_need_a_coalesced_tensor():
    ours, theirs = both([[0, 0]], np.ones(2, np.float32), (3,))
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError) as expected:
            getattr(theirs, name)()
        with pytest.raises(RuntimeError) as got:
            getattr(ours, name)()
        assert str(got.value) == str(expected.value)


# -- coalescing and conversions ----------------------------------------------------------------------------


def test_coalesce_sums_duplicates_and_sorts(pair):
    ours, theirs = pair
    assert_same(ours.coalesce(), theirs.coalesce(), exact_indices=True)
    np.testing.assert_array_equal(ours.coalesce().indices().numpy(), theirs.coalesce().indices().numpy())


def test_to_dense_and_back(pair):
    ours, theirs = pair
    dense_o, dense_t = ours.to_dense(), theirs.to_dense()
    np.testing.assert_allclose(dense_o.numpy(), dense_t.numpy(), atol=1e-6)
    for sparse_dim in range(1, dense_o.ndim + 1):
        assert_same(dense_o.to_sparse(sparse_dim), dense_t.to_sparse(sparse_dim), exact_indices=True)
    assert_same(dense_o.to_sparse(), dense_t.to_sparse(), exact_indices=True)
    assert_same(dense_o.to_sparse_coo(), dense_t.to_sparse_coo(), exact_indices=True)
    assert ours.to_sparse() is ours


@pytest.mark.parametrize("data", [3.0, 0.0, np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)])
def test_to_sparse_of_scalars_and_empty_tensors(data):
    ours, theirs = ember.tensor(data), torch.tensor(data)
    assert_same(ours.to_sparse(), theirs.to_sparse(), exact_indices=True)
    if ours.ndim:
        assert_same(ours.to_sparse(1), theirs.to_sparse(1), exact_indices=True)


@pytest.mark.parametrize("sparse_dim", [0, 3])
def test_to_sparse_errors(sparse_dim):
    with pytest.raises(RuntimeError) as expected:
        torch.ones(2, 2).to_sparse(sparse_dim)
    with pytest.raises(RuntimeError) as got:
        ember.ones(2, 2).to_sparse(sparse_dim)
    assert str(got.value) == str(expected.value)


def test_casts_clones_and_detach(pair):
    ours, theirs = pair
    assert_same(ours.to(ember.float64), theirs.to(torch.float64), exact_indices=True)
    assert_same(ours.double(), theirs.double(), exact_indices=True)
    assert_same(ours.clone(), theirs.clone(), exact_indices=True)
    assert_same(ours.detach(), theirs.detach(), exact_indices=True)


# -- ops -------------------------------------------------------------------------------------------------------

UNARY = ["neg", "abs", "sin", "tanh", "asinh", "atan", "expm1", "trunc", "sign", "sgn", "floor", "ceil", "frac"]


@pytest.mark.parametrize("name", UNARY)
def test_zero_keeping_unary_ops(pair, name):
    ours, theirs = pair
    assert_same(getattr(ours, name)(), getattr(theirs, name)(), atol=1e-5)


def test_sqrt_and_log1p_on_nonnegative_values(pair):
    ours, theirs = (t.abs() for t in pair)
    assert_same(ours.sqrt(), theirs.sqrt(), atol=1e-5)
    assert_same(ours.log1p(), theirs.log1p(), atol=1e-5)
    assert_same(ours.pow(2), theirs.pow(2), atol=1e-5)


def test_arithmetic_with_scalars(pair):
    ours, theirs = pair
    assert_same(ours * 2.5, theirs * 2.5, exact_indices=True)
    assert_same(3 * ours, 3 * theirs, exact_indices=True)
    assert_same(ours / 4, theirs / 4, exact_indices=True)
    assert_same(ours * ember.tensor(2.0), theirs * torch.tensor(2.0))
    assert_same(-ours, -theirs, exact_indices=True)
    o, t = ours.clone(), theirs.clone()
    o.mul_(2)
    t.mul_(2)
    assert_same(o, t)
    o.div_(4)
    t.div_(4)
    assert_same(o, t)


def test_add_and_sub(pair):
    ours, theirs = pair
    rng = np.random.default_rng(7)
    indices, values = random_pieces(rng, ours.shape[: ours.sparse_dim()], ours.shape[ours.sparse_dim() :], 4)
    other_o, other_t = both(indices, values, tuple(ours.shape))
    assert_same(ours + other_o, theirs + other_t)
    assert_same(ours.add(other_o, alpha=2), theirs.add(other_t, alpha=2))
    assert_same(ours - other_o, theirs - other_t)
    assert_same(ours.coalesce() + other_o.coalesce(), theirs.coalesce() + other_t.coalesce(), exact_indices=True)
    dense = rng.standard_normal(tuple(ours.shape)).astype(np.float32)
    assert_same(ember.tensor(dense) + ours, torch.tensor(dense) + theirs)
    assert_same(ember.tensor(dense).add(ours, alpha=-3), torch.tensor(dense).add(theirs, alpha=-3))
    o, t = ember.tensor(dense), torch.tensor(dense)
    o.add_(ours)
    t.add_(theirs)
    assert_same(o, t)
    o, t = ours.clone(), theirs.clone()
    o.add_(other_o)
    t.add_(other_t)
    assert_same(o, t)


def test_add_of_sparse_and_dense_is_refused_as_pytorch_does(pair):
    ours, theirs = pair
    with pytest.raises(RuntimeError) as expected:
        theirs + torch.ones(theirs.shape)
    with pytest.raises(RuntimeError) as got:
        ours + ember.ones(ours.shape)
    assert str(got.value) == str(expected.value)


def test_elementwise_products(pair):
    ours, theirs = pair
    rng = np.random.default_rng(11)
    indices, values = random_pieces(rng, ours.shape[: ours.sparse_dim()], ours.shape[ours.sparse_dim() :], 6)
    other_o, other_t = both(indices, values, tuple(ours.shape))
    assert_same(ours.coalesce() * other_o, theirs.coalesce() * other_t)
    dense = rng.standard_normal(tuple(ours.shape)).astype(np.float32)
    assert_same(ours * ember.tensor(dense), theirs * torch.tensor(dense))
    assert_same(ember.tensor(dense) * ours, torch.tensor(dense) * theirs)


def test_transposes():
    rng = np.random.default_rng(3)
    ours, theirs = both(*random_pieces(rng, (3, 5), (), 6), (3, 5))
    assert_same(ours.t(), theirs.t(), exact_indices=True)
    assert_same(ours.transpose(0, 1), theirs.transpose(0, 1), exact_indices=True)
    assert_same(ours.coalesce().t(), theirs.coalesce().t(), exact_indices=True)
    hybrid_o, hybrid_t = both(*random_pieces(rng, (3,), (2,), 3), (3, 2))
    with pytest.raises(RuntimeError) as expected:
        hybrid_t.transpose(0, 1)
    with pytest.raises(RuntimeError) as got:
        hybrid_o.transpose(0, 1)
    assert str(got.value) == str(expected.value)


MATRICES = [((4, 5), 7), ((4, 5), 0), ((3, 3), 12), ((1, 6), 3)]


@pytest.mark.parametrize("shape, nnz", MATRICES)
def test_matrix_products(shape, nnz):
    rng = np.random.default_rng(nnz)
    ours, theirs = both(*random_pieces(rng, shape, (), nnz), shape)
    dense = rng.standard_normal((shape[1], 3)).astype(np.float32)
    bias = rng.standard_normal((shape[0], 3)).astype(np.float32)
    d_o, d_t, b_o, b_t = ember.tensor(dense), torch.tensor(dense), ember.tensor(bias), torch.tensor(bias)
    assert_same(ember.sparse.mm(ours, d_o), torch.sparse.mm(theirs, d_t), atol=1e-5)
    assert_same(ember.mm(ours, d_o), torch.mm(theirs, d_t), atol=1e-5)
    assert_same(ours @ d_o, theirs @ d_t, atol=1e-5)
    assert_same(ember.matmul(ours, d_o), torch.matmul(theirs, d_t), atol=1e-5)
    assert_same(ember.spmm(ours, d_o), torch.spmm(theirs, d_t), atol=1e-5)
    assert_same(ember.sparse.addmm(b_o, ours, d_o), torch.sparse.addmm(b_t, theirs, d_t), atol=1e-5)
    assert_same(
        ember.sparse.addmm(b_o, ours, d_o, beta=0.5, alpha=2.0),
        torch.sparse.addmm(b_t, theirs, d_t, beta=0.5, alpha=2.0),
        atol=1e-5,
    )
    assert_same(ember.addmm(b_o, ours, d_o, beta=2), torch.addmm(b_t, theirs, d_t, beta=2), atol=1e-5)
    assert_same(ember.hspmm(ours, d_o), torch.hspmm(theirs, d_t), atol=1e-5, exact_indices=True)
    left = rng.standard_normal((2, shape[0])).astype(np.float32)
    assert_same(ember.tensor(left) @ ours, torch.tensor(left) @ theirs, atol=1e-5)
    other_o, other_t = both(*random_pieces(rng, (shape[1], 2), (), 4), (shape[1], 2))
    assert_same(ember.sparse.mm(ours, other_o), torch.sparse.mm(theirs, other_t), atol=1e-5)


@pytest.mark.parametrize("shape, nnz", MATRICES)
def test_smm_and_sspaddmm(shape, nnz):
    rng = np.random.default_rng(nnz + 1)
    ours, theirs = both(*random_pieces(rng, shape, (), nnz), shape)
    dense = rng.standard_normal((shape[1], 3)).astype(np.float32)
    assert_same(ember.smm(ours, ember.tensor(dense)), torch.smm(theirs, torch.tensor(dense)), exact_indices=True)
    base_o, base_t = both(*random_pieces(rng, (shape[0], 3), (), 3), (shape[0], 3))
    assert_same(
        ember.sspaddmm(base_o, ours, ember.tensor(dense), beta=2, alpha=-1),
        torch.sspaddmm(base_t, theirs, torch.tensor(dense), beta=2, alpha=-1),
        exact_indices=True,
        atol=1e-5,
    )


def test_matrix_product_shape_errors():
    ours, theirs = both([[0, 1], [1, 0]], np.ones(2, np.float32), (2, 2))
    with pytest.raises(RuntimeError) as expected:
        torch.sparse.mm(theirs, torch.ones(3, 2))
    with pytest.raises(RuntimeError) as got:
        ember.sparse.mm(ours, ember.ones(3, 2))
    assert str(got.value) == str(expected.value)


def test_sums(pair):
    ours, theirs = pair
    assert_same(ember.sparse.sum(ours), torch.sparse.sum(theirs), atol=1e-5)
    assert_same(ours.sum(), theirs.sum(), atol=1e-5)
    for dim in range(ours.ndim):
        assert_same(ember.sparse.sum(ours, dim), torch.sparse.sum(theirs, dim), atol=1e-5, exact_indices=True)
        assert_same(ember.sum(ours, dim), torch.sum(theirs, dim), atol=1e-5)
    everything = tuple(range(ours.ndim))
    assert_same(ember.sparse.sum(ours, everything), torch.sparse.sum(theirs, everything), atol=1e-5)
    if ours.ndim >= 2:
        assert_same(ember.sparse.sum(ours, (0, -1)), torch.sparse.sum(theirs, (0, -1)), atol=1e-5)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_sparse_softmax(pair, fn):
    ours, theirs = pair
    for dim in range(ours.ndim):
        assert_same(getattr(ember.sparse, fn)(ours, dim), getattr(torch.sparse, fn)(theirs, dim), atol=1e-5)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::_"):
        getattr(ember, fn)(ours, 0)  # as in PyTorch: only ember.sparse's softmax takes a sparse tensor


def test_sparse_mask(pair):
    ours, theirs = pair
    dense = np.random.default_rng(5).standard_normal(tuple(ours.shape)).astype(np.float32)
    assert_same(ember.tensor(dense).sparse_mask(ours), torch.tensor(dense).sparse_mask(theirs), exact_indices=True)
    assert_same(
        ember.tensor(dense).sparse_mask(ours.coalesce()),
        torch.tensor(dense).sparse_mask(theirs.coalesce()),
        exact_indices=True,
    )


def test_zero_and_copy(pair):
    ours, theirs = pair
    o, t = ours.clone(), theirs.clone()
    o.zero_()
    t.zero_()
    assert_same(o, t, exact_indices=True)
    o.copy_(ours)
    t.copy_(theirs)
    assert_same(o, t, exact_indices=True)


@pytest.mark.parametrize("call", ["exp", "cos", "cumsum", "view", "flip"])
def test_ops_without_a_sparse_kernel_raise_pytorchs_error(pair, call):
    ours, theirs = pair
    args = {"exp": (), "cos": (), "cumsum": (0,), "view": (-1,), "flip": ((0,),)}[call]
    with pytest.raises(NotImplementedError) as expected:
        getattr(theirs, call)(*args)
    with pytest.raises(NotImplementedError) as got:
        getattr(ours, call)(*args)
    prefix = str(expected.value).split(" backend.")[0]
    assert str(got.value).startswith(prefix)


def test_no_dense_view_of_a_sparse_tensor():
    ours, theirs = both([[0, 1]], np.ones(2, np.float32), (3,))
    assert ours.stride() == theirs.stride() and ours.is_contiguous() == theirs.is_contiguous()
    assert ours.storage_offset() == theirs.storage_offset()
    with pytest.raises(NotImplementedError, match="Cannot access storage of SparseTensorImpl"):
        ours.untyped_storage()
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        ours.numpy()
    with pytest.raises(RuntimeError):
        ours.tolist()


# -- printing and saving ------------------------------------------------------------------------------------


PRINTED = [
    (np.array([[0, 1, 1], [2, 0, 2]]), np.array([3.0, 4.0, 5.0], np.float32), (2, 3)),
    (np.array([[0, 2]]), np.array([[1.5, -2.0], [3.0, 4.25]], np.float32), (3, 2)),
    (np.zeros((2, 0), np.int64), np.zeros((0, 2), np.float32), (2, 3, 2)),
    (np.array([[0, 1]]), np.array([1.0, 2.0]), (4,)),
    (np.array([[0, 1]]), np.array([7, 8]), (4,)),
    (np.array([[0, 1]]), np.array([7, 8], np.int32), (4,)),
]


@pytest.mark.parametrize("indices, values, size", PRINTED)
def test_printing(indices, values, size):
    ours, theirs = both(indices, values, size)
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")
    if ours.dtype.is_floating_point:
        o = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), size, requires_grad=True)
        t = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size, requires_grad=True)
        assert repr(o) == repr(t).replace("torch.", "ember.")


def test_save_and_load_in_pytorchs_format(pair):
    ours, theirs = pair
    buffer = io.BytesIO()
    ember.save({"s": ours}, buffer)
    buffer.seek(0)
    assert_same(ours, torch.load(buffer)["s"], exact_indices=True)
    buffer = io.BytesIO()
    torch.save({"s": theirs}, buffer)
    buffer.seek(0)
    assert_same(ember.load(buffer)["s"], theirs, exact_indices=True)


def test_permute_of_sparse_dims_and_its_errors():
    rng = np.random.default_rng(9)
    ours, theirs = both(*random_pieces(rng, (2, 3, 4), (), 6), (2, 3, 4))
    assert_same(ours.permute(2, 0, 1), theirs.permute(2, 0, 1), exact_indices=True)
    hybrid_o, hybrid_t = both(*random_pieces(rng, (3,), (2, 4), 3), (3, 2, 4))
    assert_same(hybrid_o.permute(0, 2, 1), hybrid_t.permute(0, 2, 1), exact_indices=True)
    with pytest.raises(RuntimeError) as expected:
        hybrid_t.permute(1, 0, 2)
    with pytest.raises(RuntimeError) as got:
        hybrid_o.permute(1, 0, 2)
    assert str(got.value) == str(expected.value)


def test_sparse_resize_and_clear():
    ours, theirs = both([[0, 1]], np.ones(2, np.float32), (3,))
    ours.sparse_resize_and_clear_((4, 5, 2), 2, 1)
    theirs.sparse_resize_and_clear_((4, 5, 2), 2, 1)
    assert_same(ours, theirs, exact_indices=True)


RESIZES = [((3, 4), 2, 0), ((1, 4), 2, 0), ((3, 4, 2), 2, 1), ((3, 4, 2), 3, 0), ((3,), 1, 0), ((3, 4), 1, 1)]


@pytest.mark.parametrize("size, sparse_dim, dense_dim", RESIZES)
def test_sparse_resize(size, sparse_dim, dense_dim):
    ours, theirs = both([[0, 1], [2, 0]], np.array([3.0, 4.0], np.float32), (2, 3))
    try:
        theirs.sparse_resize_(size, sparse_dim, dense_dim)
    except RuntimeError as error:
        with pytest.raises(RuntimeError) as got:
            ours.sparse_resize_(size, sparse_dim, dense_dim)
        assert str(got.value).split("\n")[0] == str(error).split("\n")[0]
        return
    ours.sparse_resize_(size, sparse_dim, dense_dim)
    assert_same(ours, theirs, exact_indices=True)


def test_resize_as_sparse_and_old_names():
    ours, theirs = both([[0, 1], [2, 0]], np.array([3.0, 4.0], np.float32), (2, 3))
    t_o, t_t = both(np.zeros((2, 0), np.int64), np.zeros(0, np.float32), (4, 5))
    assert_same(ours.clone().resize_as_sparse_(t_o), theirs.clone().resize_as_sparse_(t_t), exact_indices=True)
    assert_same(ember.resize_as_sparse_(ours.clone(), t_o), torch.resize_as_sparse_(theirs.clone(), t_t))
    dense = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert_same(ember.dsmm(ours, ember.tensor(dense)), torch.dsmm(theirs, torch.tensor(dense)))
    assert_same(ember.hsmm(ours, ember.tensor(dense)), torch.hsmm(theirs, torch.tensor(dense)), exact_indices=True)


def test_check_sparse_tensor_invariants_switch():
    indices, values = np.array([[1, 0]]), np.array([1.0, 2.0], np.float32)
    with torch.sparse.check_sparse_tensor_invariants(), pytest.raises(RuntimeError) as expected:
        torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), (2,), is_coalesced=True)
    with ember.sparse.check_sparse_tensor_invariants():
        assert ember.sparse.check_sparse_tensor_invariants.is_enabled()
        with pytest.raises(RuntimeError) as got:
            ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values), (2,), is_coalesced=True)
    assert str(got.value) == str(expected.value)
    assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()
    # Off, the flag is taken on trust in both.
    ours, theirs = both(indices, values, (2,), is_coalesced=True)
    assert ours.is_coalesced() and theirs.is_coalesced()


@pytest.mark.parametrize("coalesce", [False, True])
def test_index_select(pair, coalesce):
    ours, theirs = pair
    if coalesce:
        ours, theirs = ours.coalesce(), theirs.coalesce()
    for dim in range(ours.ndim):
        size = ours.shape[dim]
        chosen = np.array([size - 1, 0, 0, size // 2])
        assert_same(
            ours.index_select(dim, ember.tensor(chosen)),
            theirs.index_select(dim, torch.tensor(chosen)),
            exact_indices=True,
        )


def test_cat(pair):
    ours, theirs = pair
    for dim in range(ours.ndim):
        assert_same(
            ember.cat([ours, ours.coalesce() * 2], dim),
            torch.cat([theirs, theirs.coalesce() * 2], dim),
            exact_indices=True,
        )


def test_assert_close_compares_sparse_tensors_as_pytorch_does():
    def make(lib, indices, values):
        return lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(values), (3,))

    pairs = [
        (([[0, 1]], [1.0, 2.0]), ([[0, 2]], [1.0, 2.0])),
        (([[0, 1]], [1.0, 2.0]), ([[0, 1]], [1.0, 2.5])),
        (([[0, 1]], [1.0, 2.0]), ([[0, 1, 1]], [1.0, 1.0, 1.0])),
        (([[0, 1]], [1.0, 2.0]), ([[0, 1]], [1.0, 2.0])),
    ]
    for a, b in pairs:
        outcomes = []
        for lib in (ember, torch):
            try:
                lib.testing.assert_close(make(lib, *a), make(lib, *b))
                outcomes.append(None)
            except AssertionError as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1]
    s_o, s_t = make(ember, [[0, 1]], [1.0, 2.0]), make(torch, [[0, 1]], [1.0, 2.0])
    for args_o, args_t in (
        ((s_o, s_o.to_dense()), (s_t, s_t.to_dense())),
        ((s_o.to_dense(), s_o), (s_t.to_dense(), s_t)),
    ):
        with pytest.raises(AssertionError) as expected:
            torch.testing.assert_close(*args_t)
        with pytest.raises(AssertionError) as got:
            ember.testing.assert_close(*args_o)
        assert str(got.value) == str(expected.value)
    ember.testing.assert_close(s_o, s_o.to_dense(), check_layout=False)
