"""``max_pool2d_with_indices_backward`` against PyTorch's: its CPU kernel and its decomposition, for
tiling and overlapping windows (gradients summed), padding, dilation, ceil_mode, unbatched and
channels-last inputs, float64, float32 and float16; its meta kernel; and its errors, an index outside
the plane included."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, TOLERANCES, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
OP = ember.ops.aten.max_pool2d_with_indices_backward.default

CASES = [  # (input shape, kernel, stride, padding, dilation, ceil_mode)
    ((4, 8, 32, 32), [2, 2], [2, 2], [0, 0], [1, 1], False),
    ((2, 3, 11, 10), [3, 2], [], [0, 0], [1, 1], False),  # tiles that leave the last rows and a column out
    ((2, 3, 9, 8), [3, 3], [1, 2], [1, 1], [1, 1], False),
    ((2, 3, 10, 9), [3, 2], [2, 1], [1, 0], [2, 2], True),
    ((3, 7, 6), [2, 2], [2, 2], [1, 0], [1, 1], True),
]


def _tensors(lib, case, dtype: str, channels_last: bool = False):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    rng = np.random.default_rng(len(shape))
    x = rng.integers(-3, 4, size=shape).astype(dtype)  # ties: several windows share a maximum
    if channels_last:
        t = lib.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    else:
        t = lib.from_numpy(x)
    values, indices = lib.ops.aten.max_pool2d_with_indices(t, kernel, stride, padding, dilation, ceil_mode)
    g = lib.from_numpy(rng.standard_normal(tuple(values.shape)).astype(dtype))
    return g, t, indices


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("path", ["kernel", "decomposition"])
def test_matches_pytorch(path, case, dtype):
    _, kernel, stride, padding, dilation, ceil_mode = CASES[case]
    params = (kernel, stride, padding, dilation, ceil_mode)
    g, x, i = _tensors(ember, CASES[case], dtype)
    call = OP if path == "kernel" else OP.decomposition
    ours = call(g, x, *params, i)
    tg, tx, ti = _tensors(torch, CASES[case], dtype)
    theirs = torch.ops.aten.max_pool2d_with_indices_backward(tg, tx, *params, ti)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    if path == "kernel":
        assert ours.stride() == theirs.stride()
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64), rtol=rtol, atol=atol)


@needs_torch
def test_channels_last_input():
    _, kernel, stride, padding, dilation, ceil_mode = CASES[1]
    params = (kernel, stride, padding, dilation, ceil_mode)
    g, x, i = _tensors(ember, CASES[1], "float32", channels_last=True)
    ours = OP(g, x, *params, i)
    tg, tx, ti = _tensors(torch, CASES[1], "float32", channels_last=True)
    theirs = torch.ops.aten.max_pool2d_with_indices_backward(tg, tx, *params, ti)
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_meta_matches_the_kernel(case):
    params = CASES[case][1:]
    g, x, i = _tensors(ember, CASES[case], "float32")
    real, meta = OP(g, x, *params, i), OP(g.to("meta"), x.to("meta"), *params, i.to("meta"))
    assert (tuple(real.shape), real.stride(), real.dtype) == (tuple(meta.shape), meta.stride(), meta.dtype)


@needs_torch
@pytest.mark.parametrize("shift", [0, 1], ids=["indices of the forward", "an index outside its window"])
def test_tiled_windows_match_pytorch_bit_for_bit(shift):
    # -0.0 arrives as +0.0 as PyTorch's sums make it, and an index the forward could not give
    # (inside the plane, past its window) still lands where it points.
    x = np.random.default_rng(3).standard_normal((2, 4, 9, 8)).astype(np.float32)
    g = np.random.default_rng(4).standard_normal((2, 4, 4, 4)).astype(np.float32)
    g.reshape(-1)[::5] = -0.0
    results = []
    for lib in (ember, torch):
        _, indices = lib.ops.aten.max_pool2d_with_indices(lib.from_numpy(x), [2, 2], [2, 2], [0, 0], [1, 1], False)
        indices = indices.clone()
        indices[0, 0, 0, 0] += shift * 3
        results.append(
            lib.ops.aten.max_pool2d_with_indices_backward(
                lib.from_numpy(g), lib.from_numpy(x), [2, 2], [2, 2], [0, 0], [1, 1], False, indices
            )
        )
    assert results[0].numpy().tobytes() == results[1].numpy().tobytes()


def test_errors():
    params = CASES[0][1:]
    g, x, i = _tensors(ember, CASES[0], "float32")
    with pytest.raises(RuntimeError, match="outside the 32x32 input plane"):
        OP(g, x, *params, i + 1024)
    with pytest.raises(RuntimeError, match="do not match grad_output"):
        OP(g, x, *params, i[..., :3])
    with pytest.raises(RuntimeError, match="int64 indices"):
        OP(g, x, *params, i.int())
