"""Gradients of the reduction-like ops beyond the OpInfo tables: ties, zeros in prod and cumprod,
keepdim and negative dims, 0-dim and empty inputs, degenerate corrections, norms at zero, several
outputs, double backward; and the engine's handling of roots. PyTorch is the oracle throughout.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
from ember.autograd.graph import SavedTensor, shallow

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

NAN, INF = math.nan, math.inf


def _outputs(result, lib) -> list:
    """The floating-point outputs of a result (a tensor or a tuple holding indices too)."""
    items = result if isinstance(result, tuple | list) else (result,)
    return [o for o in items if isinstance(o, lib.Tensor) and o.dtype.is_floating_point]


def grads(fn, *arrays, create_graph=False, seed=0):
    """``fn(lib, *leaves)`` in both libraries; the leaves' gradients for random cotangents, (ours, theirs)."""
    found = []
    for lib in (ember, torch):
        leaves = [lib.tensor(np.asarray(a).copy(), requires_grad=True) for a in arrays]
        outs = _outputs(fn(lib, *leaves), lib)
        rng = np.random.default_rng(seed)
        cots = [lib.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
        g = lib.autograd.grad(outs, leaves, cots, allow_unused=True, create_graph=create_graph)
        if create_graph:  # once more, through the gradients
            total = sum((x * x).sum() for x in g if x is not None)
            g = lib.autograd.grad(total, leaves, allow_unused=True)
        found.append([np.zeros(a.shape) if x is None else x.detach().numpy() for x, a in zip(g, arrays, strict=True)])
    return found


def check(fn, *arrays, create_graph=False, rtol=1e-10, atol=1e-12):
    ours, theirs = grads(fn, *arrays, create_graph=create_graph)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4))
TIES = np.array([[2.0, 7.0, 7.0, 1.0], [3.0, 3.0, 3.0, 3.0], [-1.0, 5.0, 0.0, 5.0]])


# -- prod ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        [[1.5, 0.0, 2.0, -3.0], [2.0, 1.0, 0.5, 4.0]],  # one zero
        [[0.0, 2.0, 0.0, 3.0], [1.0, 1.0, 1.0, 1.0]],  # two zeros in a row
        [[0.0, 0.0, 0.0, 0.0], [0.0, 2.0, 3.0, 4.0]],  # all zeros; zero first
    ],
)
def test_prod_with_zeros(values):
    x = np.array(values)
    check(lambda lib, t: t.prod(), x)
    check(lambda lib, t: t.prod(1), x)
    check(lambda lib, t: t.prod(-1, keepdim=True), x)
    check(lambda lib, t: t.prod(0), x)


def test_prod_zero_dim_empty_and_dtype():
    check(lambda lib, t: t.prod(), np.array(2.5))
    check(lambda lib, t: t.prod(0), np.array(-1.5))
    check(lambda lib, t: t.prod(), np.zeros((0, 3)))
    check(lambda lib, t: t.prod(0), np.zeros((0, 3)))
    check(lambda lib, t: t.prod(1, dtype=lib.float32), X)


def test_prod_double_backward_without_zeros():
    check(lambda lib, t: t.prod(1), X, create_graph=True)
    check(lambda lib, t: t.prod(), X[:2], create_graph=True)


# -- cumsum, cumprod --------------------------------------------------------------------------------


def test_cumsum():
    check(lambda lib, t: t.cumsum(-1), X)
    check(lambda lib, t: t.cumsum(0), X)
    check(lambda lib, t: t.cumsum(0), np.array(1.5))
    check(lambda lib, t: lib.cumsum(t, 1, dtype=lib.float32), X)
    check(lambda lib, t: t.clone().cumsum_(1), X)


@pytest.mark.parametrize(
    "row",
    [
        [2.0, 3.0, 0.0, 4.0, 0.5],  # one zero
        [2.0, 0.0, 3.0, 0.0, 5.0],  # two zeros
        [0.0, 3.0, 0.5, 4.0, 1.0],  # zero first
        [2.0, 3.0, 0.5, 4.0, 0.0],  # zero last
        [INF, 0.0, -0.0, 5.0, 1.0],  # inf before the first zero, a second zero right after
    ],
)
def test_cumprod_with_zeros(row):
    x = np.array([row, row[::-1]])
    check(lambda lib, t: t.cumprod(1), x)
    check(lambda lib, t: t.cumprod(0), x.T.copy())
    check(lambda lib, t: t.clone().cumprod_(-1), x)


@pytest.mark.parametrize("row", [[2.0, 3.0, 0.0, 4.0, 0.5], [2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 3.0, 0.5, 4.0, 1.0]])
def test_cumprod_double_backward_with_zeros(row):
    x = np.array([row, row[::-1]])
    check(lambda lib, t: t.cumprod(1), x, create_graph=True)
    check(lambda lib, t: t.cumprod(0), x.T.copy(), create_graph=True)


# -- extrema ---------------------------------------------------------------------------------------


def test_amax_amin_split_ties():
    for name in ("amax", "amin"):
        check(lambda lib, t, n=name: getattr(t, n)(), TIES)
        check(lambda lib, t, n=name: getattr(t, n)(1), TIES)
        check(lambda lib, t, n=name: getattr(t, n)((0, -1), keepdim=True), TIES)
        check(lambda lib, t, n=name: getattr(t, n)(-2), TIES)
        check(lambda lib, t, n=name: getattr(t, n)(), np.array(3.0))


def test_extrema_with_nan():
    x = np.array([[1.0, NAN, NAN, 0.0], [2.0, 2.0, 1.0, 0.0]])
    for fn in (
        lambda lib, t: t.amax(1),
        lambda lib, t: t.max(),
        lambda lib, t: t.min(),
        lambda lib, t: t.max(1),
        lambda lib, t: lib.aminmax(t),
        lambda lib, t: t.median(),
        lambda lib, t: t.nanmedian(),
        lambda lib, t: t.nanmedian(1),
    ):
        check(fn, x)


def test_max_min_of_everything_split_ties():
    check(lambda lib, t: t.max(), TIES)
    check(lambda lib, t: t.min(), TIES)
    check(lambda lib, t: t.max(), np.array(-2.0))


def test_max_min_along_a_dim_go_to_the_index():
    check(lambda lib, t: t.max(1), TIES)
    check(lambda lib, t: t.min(-1, keepdim=True), TIES)
    check(lambda lib, t: t.max(0)[0], TIES)
    check(lambda lib, t: t.max(0), np.array(4.0))


def test_aminmax_both_outputs_and_one():
    check(lambda lib, t: lib.aminmax(t), TIES)
    check(lambda lib, t: lib.aminmax(t, dim=1), TIES)
    check(lambda lib, t: lib.aminmax(t, dim=-2, keepdim=True), TIES)
    check(lambda lib, t: lib.aminmax(t, dim=1).max, TIES)


def test_extrema_double_backward():
    check(lambda lib, t: t.amax(1) ** 2, TIES, create_graph=True)
    check(lambda lib, t: t.max() * t.sum(), TIES, create_graph=True)


# -- sorting ---------------------------------------------------------------------------------------


def test_selecting_ops():
    check(lambda lib, t: t.sort(1), TIES)
    check(lambda lib, t: t.sort(0, descending=True), TIES)
    check(lambda lib, t: t.sort(dim=-1, stable=True), TIES)
    check(lambda lib, t: t.topk(2, 1), X)
    check(lambda lib, t: t.topk(2, 0, largest=False), X)
    check(lambda lib, t: t.kthvalue(2, 1), X)
    check(lambda lib, t: t.kthvalue(1, 0, keepdim=True), X)
    check(lambda lib, t: t.mode(1), TIES)
    check(lambda lib, t: t.median(1), TIES)
    check(lambda lib, t: t.median(), TIES)
    check(lambda lib, t: t.sort(0), np.array(1.5))


# -- moments ---------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.parametrize("correction", [0, 1, 2.5])
def test_var_std_corrections(correction):
    for name in ("var", "std", "var_mean", "std_mean"):
        check(lambda lib, t, n=name: getattr(lib, n)(t, correction=correction), X)
        check(lambda lib, t, n=name: getattr(lib, n)(t, 1, correction=correction), X)
        check(lambda lib, t, n=name: getattr(lib, n)(t, (0, -1), correction=correction, keepdim=True), X)


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
def test_var_std_at_too_few_degrees_of_freedom():
    x = np.array([[1.0, 1.0, 2.0], [3.0, 3.0, 3.0]])
    for name in ("var", "std"):
        check(lambda lib, t, n=name: getattr(lib, n)(t, correction=6), x)
        check(lambda lib, t, n=name: getattr(lib, n)(t, 1, correction=3), x)
        check(lambda lib, t, n=name: getattr(lib, n)(t, 1, correction=4), x)
        check(lambda lib, t, n=name: getattr(lib, n)(t, 1), np.array([[2.0], [5.0]]))
    check(lambda lib, t: lib.std(t, 1), x)  # a constant row: std 0, gradient 0


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
def test_var_mean_outputs_one_at_a_time():
    check(lambda lib, t: lib.var_mean(t, 1)[1], X)
    check(lambda lib, t: lib.std_mean(t, 0)[0], X)
    check(lambda lib, t: lib.var(t, 0), np.array(2.0))


def test_moments_double_backward():
    check(lambda lib, t: lib.var(t, 1), X, create_graph=True)
    check(lambda lib, t: lib.std(t), X, create_graph=True)


# -- sums with NaNs, logsumexp --------------------------------------------------------------------


def test_nansum_nanmean():
    x = np.array([[1.0, NAN, 2.0], [NAN, NAN, NAN], [0.5, -1.0, 3.0]])
    check(lambda lib, t: t.nansum(), x)
    check(lambda lib, t: t.nansum(1), x)
    check(lambda lib, t: t.nanmean(1), x)
    check(lambda lib, t: t.nanmean(0, keepdim=True), x)
    check(lambda lib, t: t.nanmean(), x)
    check(lambda lib, t: lib.nansum(t, dtype=lib.float32), x)


def test_logsumexp():
    x = np.array([[1.0, -INF, 2.0], [-INF, -INF, -INF], [0.5, INF, 3.0]])
    check(lambda lib, t: t.logsumexp(1), x)
    check(lambda lib, t: t.logsumexp((0, 1), keepdim=True), X)
    check(lambda lib, t: t.logsumexp(0), np.array(1.5))
    check(lambda lib, t: t.logsumexp(-1), X, create_graph=True)


def test_means_and_sums_over_dims():
    check(lambda lib, t: t.mean(0), X)
    check(lambda lib, t: t.mean((0, -1), keepdim=True), X)
    check(lambda lib, t: t.sum(-1), np.zeros((2, 0)))
    check(lambda lib, t: t.mean(0), np.array(2.0))


# -- norms -----------------------------------------------------------------------------------------

ORDS = [0, 1, 2, 3, 1.5, 0.5, -1, INF, -INF]


@pytest.mark.parametrize("p", ORDS)
def test_vector_norm_orders(p):
    x = np.array([[0.0, -2.0, 2.0, 1.0], [0.5, -0.5, 3.0, -3.0]])
    check(lambda lib, t: lib.linalg.vector_norm(t, p), x)
    check(lambda lib, t: lib.linalg.vector_norm(t, p, dim=1), x)
    check(lambda lib, t: lib.linalg.vector_norm(t, p, dim=(-1,), keepdim=True), x)


@pytest.mark.parametrize("p", ORDS)
def test_vector_norm_at_zero(p):
    check(lambda lib, t: lib.linalg.vector_norm(t, p), np.zeros(3))
    check(lambda lib, t: lib.linalg.vector_norm(t, p, dim=1), np.array([[0.0, 0.0], [1.0, -2.0]]))


def test_vector_norm_double_backward_and_dtype():
    check(lambda lib, t: lib.linalg.vector_norm(t), X, create_graph=True)
    check(lambda lib, t: lib.linalg.vector_norm(t, 3, dim=0), X, create_graph=True)
    check(lambda lib, t: lib.linalg.vector_norm(t.float(), dim=1, dtype=lib.float64), X)


# -- nondifferentiable -----------------------------------------------------------------------------


def test_integer_and_bool_results_carry_no_gradient():
    x = ember.tensor(X, requires_grad=True)
    for result in (x.argmax(), x.argmin(1), x.all(), x.any(1), ember.count_nonzero(x), ember.count_nonzero(x, 1)):
        assert not result.requires_grad and result.grad_fn is None
    values, indices = x.max(1)
    assert values.requires_grad and not indices.requires_grad


# -- the engine ------------------------------------------------------------------------------------


def test_several_outputs_of_one_node_as_roots():
    check(lambda lib, t: lib.var_mean(t, 1), X)
    ours, theirs = [], []
    for lib, out in ((ember, ours), (torch, theirs)):
        x = lib.tensor(X, requires_grad=True)
        v, m = lib.var_mean(x * 2, 1)
        lib.autograd.backward([v, m], [lib.ones(3, dtype=lib.float64), lib.full((3,), 2.0, dtype=lib.float64)])
        out.append(x.grad.numpy())
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)


@pytest.mark.parametrize("grad_dtype", ["float64", "float16", "int64", "bool"])
def test_root_gradient_takes_the_output_dtype(grad_dtype):
    dtypes = []
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        seen = []
        y.register_hook(lambda g, seen=seen: seen.append(g.dtype))
        g = lib.ones(3, dtype=getattr(lib, grad_dtype))
        (gx,) = lib.autograd.grad(y, x, g)
        (gleaf,) = lib.autograd.grad(x, x, g)
        dtypes.append((str(gx.dtype).split(".")[-1], str(gleaf.dtype).split(".")[-1], str(seen[0]).split(".")[-1]))
    assert dtypes[0] == dtypes[1] == ("float32", "float32", "float32")


def test_complex_root_gradient_of_a_real_output_is_refused():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="For complex Tensors, both grad_output and output"):
        ember.autograd.grad(x * 2, x, ember.ones(2, dtype=ember.complex64))


class _Tagged(ember.Tensor):
    """A subclass with its own state, as a batched tensor has its batch dim."""


def test_saved_outputs_keep_their_subclass():
    base = ember.tensor([1.0, 2.0])
    t = shallow(base)
    t.__class__ = _Tagged
    t.tag = "batch dim 0"
    t.requires_grad = True
    alias = shallow(t)
    assert type(alias) is _Tagged and alias.tag == "batch dim 0"
    assert not alias.requires_grad and alias.grad_fn is None
    assert alias._storage is base._storage
    unpacked = SavedTensor(t, is_output=True).unpack(None)
    assert type(unpacked) is _Tagged and unpacked.tag == "batch dim 0" and unpacked.requires_grad


# -- the nuclear norm and the SVD ------------------------------------------------------------------

A3 = RNG.standard_normal((2, 4, 3))


def test_nuclear_norm():
    check(lambda lib, t: lib.norm(t, "nuc"), A3[0])
    check(lambda lib, t: lib.norm(t, "nuc", dim=(0, 2)), A3)
    check(lambda lib, t: lib.norm(t, "nuc", dim=(-1, 1), keepdim=True), A3)
    check(lambda lib, t: lib.norm(t, "nuc"), A3[0].T.copy())


def test_nuclear_norm_of_complex_matrices():
    a = A3[0] + 1j * A3[1]
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(a.astype(np.complex64), requires_grad=True)
        (g,) = lib.autograd.grad(lib.norm(t, "nuc"), t)
        grads.append(g.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-5)


def test_svd_through_the_vectors_of_complex_matrices_is_refused():
    t = ember.tensor((A3[0] + 1j * A3[1]).astype(np.complex64), requires_grad=True)
    U = ember.linalg.svd(t, full_matrices=False).U
    with pytest.raises(NotImplementedError, match="_linalg_svd through U or Vh"):
        ember.autograd.grad(U.abs().sum(), t)


# -- paths that read no values: tensor subclasses and the meta device ------------------------------


def _tagged_leaf(array):
    """A leaf of a plain subclass: formulas cannot read its values (as for a vmap batch)."""
    t = shallow(ember.tensor(array))
    t.__class__ = _Tagged
    t.requires_grad = True
    return t


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, t: t.prod(),
        lambda lib, t: t.prod(1),
        lambda lib, t: t.cumprod(1),
        lambda lib, t: t.cumprod(0),
        lambda lib, t: t.max(),
        lambda lib, t: t.median(),
        lambda lib, t: t.nanmedian(),
    ],
)
@pytest.mark.parametrize("values", [TIES, np.array([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0]]), np.array([[1.0, NAN, NAN]])])
def test_subclass_inputs_take_the_value_independent_path(fn, values):
    x = _tagged_leaf(values)
    out = fn(ember, x)
    cot = np.random.default_rng(0).standard_normal(tuple(out.shape))
    (ours,) = ember.autograd.grad(out, x, ember.tensor(cot))
    t = torch.tensor(values, requires_grad=True)
    (theirs,) = torch.autograd.grad(fn(torch, t), t, torch.tensor(cot))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.prod(),
        lambda t: t.prod(1),
        lambda t: t.cumprod(1),
        lambda t: t.max(),
        lambda t: t.median(),
        lambda t: t.amax(1),
        lambda t: t.max(1)[0],
        lambda t: t.sort(1)[0],
        lambda t: ember.var_mean(t, 1)[0],
        lambda t: ember.linalg.vector_norm(t, 3, dim=0),
    ],
)
def test_gradients_on_the_meta_device(fn):
    x = ember.empty((2, 3), dtype=ember.float64, device="meta", requires_grad=True)
    out = fn(x)
    (g,) = ember.autograd.grad(out, x, ember.empty(out.shape, dtype=ember.float64, device="meta"))
    assert g.device.type == "meta" and tuple(g.shape) == (2, 3) and g.dtype == ember.float64
