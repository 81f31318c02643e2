"""``threshold_backward`` against PyTorch's: dtypes and their promotion, broadcasting, thresholds
cast to the operands' dtype, nan in either operand, arrays large enough for the bit-level choice
(compared bit for bit), meta shapes, errors; and ReLU's gradient of a gradient, which runs through
the op's own derivative."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _data(shape, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype in ("int64", "int32", "uint8"):
        return rng.integers(0 if dtype == "uint8" else -3, 4, size=shape).astype(dtype)
    values = rng.standard_normal(shape) * 2
    flat = values.reshape(-1)
    flat[::7], flat[1::11] = np.nan, -0.0
    return values.astype(np.float32 if dtype == "bfloat16" else dtype)


def _both(array: np.ndarray, dtype: str):
    ours, theirs = ember.from_numpy(array.copy()), torch.from_numpy(array.copy())
    if dtype == "bfloat16":
        ours, theirs = ours.to(ember.bfloat16), theirs.to(torch.bfloat16)
    return ours, theirs


def _same(ours, theirs) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    if theirs.dtype == torch.bfloat16:  # (nan payloads differ between the two float conversions)
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
        return
    assert ours.numpy().tobytes() == theirs.contiguous().numpy().tobytes()


@needs_torch
@pytest.mark.parametrize("threshold", [0, 0.5, -1.25])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32"])
@pytest.mark.parametrize("shape", [(4, 8, 16, 16), (3, 5)], ids=["large", "small"])
def test_matches_pytorch_bit_for_bit(shape, dtype, threshold):
    g_ours, g_theirs = _both(_data(shape, dtype, 1), dtype)
    x_ours, x_theirs = _both(_data(shape, dtype, 2), dtype)
    _same(
        ember.ops.aten.threshold_backward(g_ours, x_ours, threshold),
        torch.ops.aten.threshold_backward(g_theirs, x_theirs, threshold),
    )


@needs_torch
@pytest.mark.parametrize(
    "grad_dtype, self_dtype, grad_shape, self_shape",
    [
        ("float32", "float64", (4, 8, 16, 16), (4, 8, 16, 16)),
        ("int64", "float32", (8, 16, 16), (8, 16, 16)),
        ("float32", "float32", (4, 8, 16, 16), (16, 16)),
        ("float64", "float64", (16,), (2, 16, 16, 16)),
    ],
)
def test_promotes_and_broadcasts_as_pytorch(grad_dtype, self_dtype, grad_shape, self_shape):
    g_ours, g_theirs = _both(_data(grad_shape, grad_dtype, 3), grad_dtype)
    x_ours, x_theirs = _both(_data(self_shape, self_dtype, 4), self_dtype)
    _same(
        ember.ops.aten.threshold_backward(g_ours, x_ours, 0.25),
        torch.ops.aten.threshold_backward(g_theirs, x_theirs, 0.25),
    )


def test_meta_shape_and_dtype():
    g, x = ember.empty(4, 1, 3, device="meta"), ember.empty(5, 3, dtype=ember.float64, device="meta")
    out = ember.ops.aten.threshold_backward(g, x, 0)
    assert tuple(out.shape) == (4, 5, 3) and out.dtype == ember.float64 and out.device.type == "meta"


@needs_torch
@pytest.mark.parametrize("threshold", [-1.25, 300, 255.5, -1])
def test_integer_thresholds_out_of_range_raise_as_in_pytorch(threshold):
    x = np.arange(6, dtype=np.uint8)
    try:
        expected = torch.ops.aten.threshold_backward(torch.from_numpy(x), torch.from_numpy(x), threshold)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=str(error)):
            ember.ops.aten.threshold_backward(ember.from_numpy(x), ember.from_numpy(x), threshold)
        return
    _same(ember.ops.aten.threshold_backward(ember.from_numpy(x), ember.from_numpy(x), threshold), expected)


@pytest.mark.parametrize("dtype", ["bool", "complex64"])
def test_refuses_bool_and_complex(dtype):
    x = ember.ones(3, dtype=getattr(ember, dtype))
    with pytest.raises(NotImplementedError, match='"threshold_cpu" not implemented for'):
        ember.ops.aten.threshold_backward(x, x, 0)


@needs_torch
def test_relu_gradient_of_a_gradient_matches_pytorch():
    x = np.random.default_rng(5).standard_normal((4, 8, 16, 16))
    results = []
    for lib in (ember, torch):
        xt = lib.tensor(x).requires_grad_(True)
        out = lib.relu(xt)
        cot = lib.tensor(np.random.default_rng(6).standard_normal(x.shape)).requires_grad_(True)
        (gx,) = lib.autograd.grad(out, xt, cot, create_graph=True)
        (gg,) = lib.autograd.grad((gx * gx).sum(), cot)
        results.append((gx.detach().numpy(), gg.numpy()))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_decomposition_matches_kernel(dtype):
    """The decomposition (a where over the mask) gives the kernel's values, NaNs and -0.0 included."""
    op = ember.ops.aten.threshold_backward.default
    grad = ember.from_numpy(_data((5, 7), dtype, 0))
    x = ember.from_numpy(_data((7,), dtype, 1))
    for threshold in (0, 1, -2):
        expected, got = op(grad, x, threshold), op.decompose(grad, x, threshold)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
        assert (np.signbit(np.asarray(got)) == np.signbit(np.asarray(expected))).all()
