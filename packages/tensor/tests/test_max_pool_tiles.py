"""``max_pool2d_with_indices`` where the windows tile the input (stride equal to the kernel, no
padding nor dilation), the shortcut of ``ember.core.aten.nn.pooling``: values and indices bit for bit
as PyTorch gives them, for nan anywhere in a window (the last nan wins), ties (the first maximum
wins, signed zeros included), -inf, odd sizes that leave rows and columns out, ceil_mode, integer
dtypes and channels-last inputs, on planes large enough for the bit-level selection and small ones."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _check(x: np.ndarray, channels_last: bool = False, **kwargs) -> None:
    if channels_last:  # NHWC memory seen as NCHW
        nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        ours = ember.from_numpy(nhwc.copy()).permute(0, 3, 1, 2)
        theirs = torch.from_numpy(nhwc.copy()).permute(0, 3, 1, 2)
    else:
        ours, theirs = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
    values, indices = ember.nn.functional.max_pool2d(ours, return_indices=True, **kwargs)
    expected_values, expected_indices = torch.nn.functional.max_pool2d(theirs, return_indices=True, **kwargs)
    assert tuple(values.shape) == tuple(expected_values.shape)
    assert values.stride() == expected_values.stride() and indices.stride() == expected_indices.stride()
    # Bytes, so that nan and the sign of zero count.
    assert np.ascontiguousarray(values.numpy()).tobytes() == np.ascontiguousarray(expected_values.numpy()).tobytes()
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())


def _specials(shape, seed: int, dtype=np.float32) -> np.ndarray:
    """Few distinct values (ties in most windows), with nan, -inf, inf and both zeros sprinkled in."""
    rng = np.random.default_rng(seed)
    x = rng.choice(
        np.array([-1.0, -0.0, 0.0, 1.0, 2.0, -np.inf, np.inf, np.nan]),
        size=shape,
        p=[0.2, 0.15, 0.15, 0.2, 0.2, 0.04, 0.03, 0.03],
    )
    return x.astype(dtype)


@needs_torch
@pytest.mark.parametrize("shape", [(4, 8, 32, 32), (2, 3, 6, 4)], ids=["large", "small"])
@pytest.mark.parametrize("kernel", [2, (2, 3), 1])
def test_tiled_windows_match_pytorch_with_ties_nan_and_signed_zeros(shape, kernel):
    _check(_specials(shape, seed=1), kernel_size=kernel)


@needs_torch
def test_windows_full_of_nan_and_of_minus_inf():
    x = np.full((2, 4, 16, 16), -np.inf, np.float32)
    x[0, :, :8] = np.nan
    x[1, :, ::3, ::5] = np.nan  # one nan per some windows, at varied taps
    _check(x, kernel_size=2)
    _check(x, kernel_size=4)


@needs_torch
@pytest.mark.parametrize("shape", [(2, 5, 33, 35), (3, 17, 19)])
def test_odd_sizes_leave_the_last_rows_and_columns_out(shape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    _check(x, kernel_size=2)
    _check(x, kernel_size=3)
    _check(x, kernel_size=2, ceil_mode=True)  # a partial last window: the general path


@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32, np.uint8])
def test_other_dtypes(dtype):
    rng = np.random.default_rng(3)
    if np.dtype(dtype).kind == "f":
        x = _specials((2, 8, 32, 32), seed=4, dtype=dtype)
    else:
        x = rng.integers(0, 4, size=(2, 8, 32, 32)).astype(dtype)
    _check(x, kernel_size=2)


@needs_torch
def test_channels_last_input():
    _check(_specials((4, 8, 32, 32), seed=5), channels_last=True, kernel_size=2)


@needs_torch
def test_gradient_through_the_tiled_indices():
    x = _specials((4, 8, 32, 32), seed=6)
    x[np.isnan(x)] = 0.5  # finite gradients: nan inputs would only propagate
    g = np.random.default_rng(7).standard_normal((4, 8, 16, 16)).astype(np.float32)
    ours = ember.from_numpy(x.copy()).requires_grad_()
    ember.nn.functional.max_pool2d(ours, 2).backward(ember.from_numpy(g))
    theirs = torch.from_numpy(x.copy()).requires_grad_()
    torch.nn.functional.max_pool2d(theirs, 2).backward(torch.from_numpy(g))
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@needs_torch
@pytest.mark.parametrize("shape", [(4, 8, 32, 32), (2, 3, 6, 4)], ids=["large", "small"])
def test_ties_without_nan_or_negative_zero(shape):
    # The plain np.maximum plan: ties everywhere, only +0.0 among the zeros.
    x = np.random.default_rng(8).integers(-1, 3, size=shape).astype(np.float32)
    x[x == 0] = 0.0
    _check(x, kernel_size=2)
    _check(x, kernel_size=(3, 2))
