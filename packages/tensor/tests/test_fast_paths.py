"""The CPU shortcuts of hot ops give what the general path and PyTorch give: values, dtypes, strides,
version counters, and PyTorch's errors where the shortcut does not apply."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
RNG = np.random.default_rng(11)


def _pair(*shape, dtype=np.float32):
    data = RNG.standard_normal(shape).astype(dtype)
    return ember.from_numpy(data.copy()), torch.from_numpy(data.copy())


def _same(ours, theirs) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_stack_of_one_kind_matches_pytorch(dim):
    pairs = [_pair(3, 4) for _ in range(5)]
    _same(ember.stack([p[0] for p in pairs], dim), torch.stack([p[1] for p in pairs], dim))


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_of_one_kind_matches_pytorch(dim):
    pairs = [_pair(2, 3, 4) for _ in range(4)]
    _same(ember.cat([p[0] for p in pairs], dim), torch.cat([p[1] for p in pairs], dim))


@needs_torch
def test_joining_errors_still_come_from_the_plan():
    a, b = ember.ones(2, 3), ember.ones(3, 3)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([a, b])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1"):
        ember.cat([a, b], 1)


@needs_torch
@pytest.mark.parametrize(("left", "right"), [((4, 3), (3,)), ((3,), (2, 3)), ((2, 1, 3), (3,))])
def test_broadcast_binary_matches_pytorch(left, right):
    (a, ta), (b, tb) = _pair(*left), _pair(*right)
    _same(a + b, ta + tb)
    _same(b * a, tb * ta)


def test_shapes_that_do_not_broadcast_raise_pytorchs_error():
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.ones(2, 3) + ember.ones(4)


@needs_torch
@pytest.mark.parametrize("alpha", [None, -0.01, 3])
def test_inplace_add_with_alpha_matches_pytorch(alpha):
    (p, tp), (g, tg) = _pair(5, 6), _pair(5, 6)
    # The general path: the same update into a transposed (non-contiguous) copy of the target.
    general = ember.from_numpy(np.ascontiguousarray(p.numpy().T)).t()
    kwargs = {} if alpha is None else {"alpha": alpha}
    version = p._version
    assert p.add_(g, **kwargs) is p
    general.add_(g, **kwargs)
    tp.add_(tg, **kwargs)
    assert p._version == version + 1
    np.testing.assert_array_equal(p.numpy(), general.numpy())
    # PyTorch fuses a + alpha * b (one rounding less): agreement to an ulp.
    np.testing.assert_allclose(p.numpy(), tp.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_inplace_with_the_target_as_operand():
    p, tp = _pair(4, 4)
    p.mul_(0.5).sub_(p)
    tp.mul_(0.5).sub_(tp)
    _same(p, tp)


def test_inplace_into_an_expanded_tensor_is_refused():
    target = ember.ones(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        target.add_(ember.ones(2, 3), alpha=2.0)


@needs_torch
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_and_bool_operands_match_pytorch(dtype):
    data = np.random.default_rng(4).integers(0, 3, (4, 5)).astype(dtype)
    other = np.random.default_rng(5).integers(0, 3, (4, 5)).astype(dtype)
    a, b = ember.from_numpy(data.copy()), ember.from_numpy(other.copy())
    ta, tb = torch.from_numpy(data.copy()), torch.from_numpy(other.copy())
    _same(a == b, ta == tb)
    _same(a & b, ta & tb)
    if dtype is not np.bool_:
        _same(a * b, ta * tb)
        _same(a * 2, ta * 2)  # a Python number: the general path
        _same(a / b, ta / tb)  # true division leaves the integers: the general path


def test_integer_division_by_zero_still_raises():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.tensor([4, 2]) // ember.tensor([2, 0])


@needs_torch
def test_zero_dim_operand_matches_pytorch():
    (a, ta), (s, ts) = _pair(3, 4), _pair()
    _same(a / s, ta / ts)
    _same(s - a, ts - ta)
    (c, tc), _ = _pair(1, 4), None
    _same(c * s, tc * ts)


@needs_torch
@pytest.mark.parametrize(("dim", "keepdim"), [(0, False), (-1, True), (1, False)])
def test_sum_and_prod_over_one_dim_match_pytorch(dim, keepdim):
    a, ta = _pair(3, 4, 5)
    for name in ("sum", "prod"):
        ours, theirs = getattr(a, name)(dim, keepdim=keepdim), getattr(ta, name)(dim, keepdim=keepdim)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        # Float32 sums agree with PyTorch's to rounding (the order of additions differs)...
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)
    # ...and exactly with the general path (a dim given as a list takes it).
    np.testing.assert_array_equal(a.sum(dim, keepdim=keepdim).numpy(), a.sum([dim], keepdim=keepdim).numpy())


def test_sum_over_a_dim_out_of_range_raises_indexerror():
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2, 3).sum(2)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "dim"),
    [
        ((4, 6, 8, 8), (-1, -2)),  # a global average pool, its dims in either order
        ((4, 6, 8, 8), (2, 3)),
        ((3, 5, 4096), (-1,)),  # the longest row the product by ones folds
        ((3, 5, 4097), (-1,)),  # one longer: NumPy's reduce
        ((4, 6, 8, 8), (1, 3)),  # not the last dims
    ],
)
def test_sums_and_means_over_the_last_dims_match_pytorch(shape, dim, dtype):
    # Over a C-contiguous tensor's last dims, sum and mean fold each row by a product with ones.
    a, ta = _pair(*shape, dtype=dtype)
    flat = a.numpy().reshape(-1)
    flat[::97], flat[1::101], flat[2::103] = np.nan, np.inf, -0.0
    ta = torch.from_numpy(a.numpy().copy())
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    for name in ("sum", "mean"):
        for keepdim in (False, True):
            ours, theirs = getattr(a, name)(dim, keepdim=keepdim), getattr(ta, name)(dim, keepdim=keepdim)
            assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=rtol)
    zeros = ember.full(shape, -0.0, dtype=ember.float64 if dtype == np.float64 else ember.float32)
    # PyTorch's sums start from +0.0, so a sum of -0.0 alone is +0.0.
    assert not np.signbit(zeros.sum(dim).numpy()).any()


@needs_torch
def test_an_int64_counter_steps_in_place_as_in_pytorch():
    # add_ and sub_ of an int64 tensor and a Python int take the in-place shortcut.
    for value in (0, 2**63 - 1, -(2**63)):
        ours, theirs = ember.tensor(value), torch.tensor(value)
        versions = (ours._version, theirs._version)
        for step in (1, 5, -3):
            ours.add_(step), theirs.add_(step)
            assert int(ours) == int(theirs)
            ours.sub_(step), theirs.sub_(step)
            assert int(ours) == int(theirs)
        ours += 1
        theirs += 1
        assert int(ours) == int(theirs) and ours.dtype == ember.int64
        assert ours._version - versions[0] == theirs._version - versions[1] == 7
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        ember.tensor(3).add_(2.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        ember.tensor(3).add_(2, alpha=1.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
        ember.tensor(True).add_(1)
