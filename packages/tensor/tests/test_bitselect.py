"""``where`` and ``relu`` on arrays large enough for the branch-free selection of
``ember.core.bitselect``: the same bits as PyTorch (nan, signed zeros, infinities), dtypes and shapes,
with broadcasting and strided operands."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
from ember.core.bitselect import select

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
SHAPE = (4, 8, 16, 16)  # 8192 elements: above the size where the bit path starts


def _data(dtype: str, shape=SHAPE, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    values = rng.standard_normal(shape) * 4
    if dtype in ("float32", "float64"):
        flat = values.reshape(-1)
        flat[::7], flat[1::11], flat[2::13], flat[3::17] = np.nan, -0.0, -np.inf, np.inf
    return values.astype(dtype)


def _bits_equal(ours, theirs) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.numpy().tobytes() == theirs.numpy().tobytes()


def _where_matches(condition: np.ndarray, args: tuple) -> None:
    """``where(condition, *args)`` in both libraries, the arrays among ``args`` as tensors, bit for bit."""
    results = []
    for lib in (ember, torch):
        operands = [lib.from_numpy(v) if isinstance(v, np.ndarray) else v for v in args]
        results.append(lib.where(lib.from_numpy(condition), *operands))
    _bits_equal(*results)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
def test_where_matches_pytorch_bit_for_bit(dtype):
    condition = _data("bool", seed=1)
    a, b = _data(dtype, seed=2), _data(dtype, seed=3)
    ours = ember.where(ember.from_numpy(condition), ember.from_numpy(a), ember.from_numpy(b))
    _bits_equal(ours, torch.where(torch.from_numpy(condition), torch.from_numpy(a), torch.from_numpy(b)))


@needs_torch
@pytest.mark.parametrize("value", [0.0, -0.0, float("nan"), 2.5])
@pytest.mark.parametrize("side", ["self", "other"])
def test_where_with_a_scalar_matches_pytorch(value, side):
    condition, x = _data("bool", seed=4), _data("float32", seed=5)
    _where_matches(condition, (x, value) if side == "self" else (value, x))


@needs_torch
def test_where_broadcasts_and_reads_strided_operands():
    condition = _data("bool", (4, 1, 16, 16), seed=6)
    a = _data("float32", (4, 8, 16, 32), seed=7)[..., ::2]  # every other column: not contiguous
    b = _data("float32", (16, 16), seed=8)
    ours = ember.where(ember.from_numpy(condition), ember.from_numpy(a), ember.from_numpy(b))
    _bits_equal(ours, torch.where(torch.from_numpy(condition), torch.from_numpy(a.copy()), torch.from_numpy(b)))


@needs_torch
def test_where_with_a_uint8_condition_and_mixed_dtypes():
    condition = _data("bool", seed=9).astype(np.uint8) * 3  # any nonzero byte chooses self
    a, b = _data("float32", seed=10), _data("float64", seed=11)
    ours = ember.where(ember.from_numpy(condition), ember.from_numpy(a), ember.from_numpy(b))
    theirs = torch.where(torch.from_numpy(condition).bool(), torch.from_numpy(a), torch.from_numpy(b))
    _bits_equal(ours, theirs)


@needs_torch
@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_where_with_zero_and_a_smaller_condition(zero):
    condition = _data("bool", (4, 1, 16, 16), seed=16)  # the mask words must not take the result
    x = _data("float32", seed=17)
    for args in ((x, zero), (zero, x)):
        _where_matches(condition, args)


@needs_torch
@pytest.mark.parametrize("shape", [SHAPE, (3, 7, 1001)], ids=["one block", "blocks and a tail"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8"])
def test_relu_matches_pytorch_bit_for_bit(dtype, shape):
    x = _data(dtype, shape, seed=12)
    _bits_equal(ember.relu(ember.from_numpy(x)), torch.relu(torch.from_numpy(x)))
    strided = x[..., ::2]
    _bits_equal(ember.relu(ember.from_numpy(strided)), torch.relu(torch.from_numpy(strided.copy())))
    ours, theirs = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
    ours.relu_(), theirs.relu_()
    _bits_equal(ours, theirs)


@needs_torch
def test_relu_gradient_matches_pytorch():
    x, g = _data("float32", seed=13), _data("float32", seed=14)
    ours = ember.from_numpy(x).requires_grad_()
    ember.relu(ours).backward(ember.from_numpy(g))
    theirs = torch.from_numpy(x).requires_grad_()
    torch.relu(theirs).backward(torch.from_numpy(g))
    _bits_equal(ours.grad, theirs.grad)


@pytest.mark.parametrize("dtype", [np.float16, np.complex64, np.uint16])
def test_select_is_where_for_other_widths(dtype):
    rng = np.random.default_rng(15)
    condition = rng.random(SHAPE) < 0.5
    a = (rng.standard_normal(SHAPE) * 50).astype(dtype)
    b = (rng.standard_normal(SHAPE[1:]) * 50).astype(dtype)
    for x, y in ((a, b), (a, np.zeros((), dtype)[()]), (np.zeros((), dtype)[()], b)):
        expected = np.where(condition, x, y)
        result = select(condition, x, y)
        assert result.dtype == expected.dtype and result.tobytes() == expected.tobytes()
