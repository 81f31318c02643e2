"""``convolution_backward`` against PyTorch's: its CPU kernel (also with every tap stack split by
kernel row) and its decomposition, for plain and transposed, 1-D and 2-D convolutions with stride,
padding, dilation, groups and output padding, each ``output_mask``, float64, float32 and float16,
and a channels-last input; its meta kernel's shapes, dtypes and strides; and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, TOLERANCES, assert_masked_results_match, torch

import ember
from ember.core.aten.nn import conv_grid

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
OP = ember.ops.aten.convolution_backward.default

CASES = [
    # (input shape, weight shape, stride, padding, dilation, groups, transposed, output_padding)
    ((2, 4, 7, 8), (6, 4, 3, 3), [1, 1], [1, 1], [1, 1], 1, False, [0, 0]),
    ((2, 4, 7, 8), (6, 2, 3, 2), [2, 1], [1, 0], [1, 2], 2, False, [0, 0]),
    ((2, 4, 11), (6, 2, 4), [3], [2], [2], 2, False, [0]),
    ((2, 4, 4, 5), (4, 3, 3, 2), [2, 3], [1, 0], [1, 2], 2, True, [1, 2]),
    ((2, 4, 5, 5), (4, 3, 3, 3), [1, 1], [1, 1], [1, 1], 1, True, [0, 0]),
    ((2, 2, 6), (2, 3, 3), [2], [1], [3], 1, True, [2]),
    ((0, 3, 5, 5), (2, 3, 3, 3), [1, 1], [1, 1], [1, 1], 1, False, [0, 0]),  # an empty batch
    # stride 1 runs on the padded grid: no padding, padding past the kernel's reach, dilation,
    # groups, uneven kernels and padding, 1-D, and transposed with groups and dilation
    ((3, 3, 6, 5), (4, 3, 2, 3), [1, 1], [0, 0], [1, 1], 1, False, [0, 0]),
    ((2, 2, 4, 5), (3, 2, 2, 2), [1, 1], [3, 2], [1, 1], 1, False, [0, 0]),
    ((2, 6, 7, 6), (4, 3, 3, 2), [1, 1], [2, 1], [2, 3], 2, False, [0, 0]),
    ((2, 4, 9), (8, 1, 3), [1], [1], [2], 4, False, [0]),
    ((2, 4, 5, 6), (4, 3, 3, 2), [1, 1], [1, 0], [2, 1], 2, True, [0, 0]),
]


def _arrays(case, dtype: str, seed: int):
    shape, wshape, stride, padding, dilation, groups, transposed, output_padding = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(wshape).astype(dtype)
    out = torch.ops.aten.convolution(
        torch.from_numpy(x), torch.from_numpy(w), None, stride, padding, dilation, transposed, output_padding, groups
    )
    g = rng.standard_normal(tuple(out.shape)).astype(dtype)
    return g, x, w


def _call(op, lib, arrays, case, mask, channels_last=False):
    stride, padding, dilation, groups, transposed, output_padding = case[2:]
    g, x, w = (lib.from_numpy(a.copy()) for a in arrays)
    if channels_last:
        x = lib.from_numpy(np.ascontiguousarray(arrays[1].transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    bias_sizes = [g.shape[1]] if mask[2] else None
    return op(g, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, mask)


@needs_torch
@pytest.mark.parametrize("mask", [(True, True, True), (False, True, False), (True, False, False)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("path", ["kernel", "kernel by kernel rows", "decomposition"])
def test_matches_pytorch(path, case, dtype, mask, monkeypatch):
    if path == "kernel by kernel rows":  # each kernel row its own stack and GEMM, as for large inputs
        monkeypatch.setattr(conv_grid, "_STACK_BYTES", 0)
    arrays = _arrays(CASES[case], dtype, seed=case)
    mask = list(mask)
    call = OP.decomposition if path == "decomposition" else OP
    ours = _call(call, ember, arrays, CASES[case], mask)
    theirs = _call(torch.ops.aten.convolution_backward, torch, arrays, CASES[case], mask)
    rtol, atol = TOLERANCES[dtype]
    scale = 4 if dtype == "float16" else 1  # sums of a few dozen half products
    tolerance = lambda i, b: (rtol * scale, atol * scale * 4)  # noqa: E731
    assert_masked_results_match(ours, theirs, mask, tolerance, strides=path != "decomposition")


@needs_torch
def test_channels_last_input():
    arrays = _arrays(CASES[0], "float32", seed=9)
    ours = _call(OP, ember, arrays, CASES[0], [True, True, True], channels_last=True)
    theirs = _call(torch.ops.aten.convolution_backward, torch, arrays, CASES[0], [True, True, True], channels_last=True)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_meta_matches_the_kernel(case):
    shape, wshape, stride, padding, dilation, groups, transposed, output_padding = CASES[case]
    x, w = ember.randn(*shape), ember.randn(*wshape)
    g = ember.ops.aten.convolution(x, w, None, stride, padding, dilation, transposed, output_padding, groups)
    args = (None, stride, padding, dilation, transposed, output_padding, groups, [True, True, True])
    real = OP(g, x, w, *args)
    meta = OP(g.to("meta"), x.to("meta"), w.to("meta"), *args)
    for a, b in zip(real, meta, strict=True):
        assert (tuple(a.shape), a.stride(), a.dtype) == (tuple(b.shape), b.stride(), b.dtype)


def test_errors():
    x, w = ember.randn(2, 3, 5, 5), ember.randn(4, 3, 3, 3)
    args = (None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])
    with pytest.raises(RuntimeError, match="does not fit"):
        OP(ember.randn(2, 5, 3, 3), x, w, *args)
    with pytest.raises(RuntimeError, match="of 3 or 4 dims alike"):
        OP(ember.randn(2, 4, 3), x, w, *args)
