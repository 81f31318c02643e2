"""``native_batch_norm_backward`` against PyTorch's: its CPU kernel and its decomposition, in training
and evaluation, with and without a weight, each ``output_mask``, contiguous, channels-last and
strided inputs, 2-D to 4-D, float64, float32 and half inputs with float32 parameters; its meta
kernel's shapes, dtypes and strides; and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, TOLERANCES, assert_masked_results_match, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
OP = ember.ops.aten.native_batch_norm_backward.default


def _case(shape, dtype: str, layout: str, weight: bool, seed: int):
    """(grad, input, weight, running_mean, running_var, save_mean, save_invstd) as NumPy arrays."""
    rng = np.random.default_rng(seed)
    param = "float32" if dtype == "float16" else dtype
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    dims = tuple(d for d in range(len(shape)) if d != 1)
    wide = x.astype(np.float64)
    save_mean = wide.mean(axis=dims).astype(param)
    save_invstd = (1 / np.sqrt(wide.var(axis=dims) + 1e-5)).astype(param)
    return [
        g,
        x,
        rng.standard_normal(c).astype(param) if weight else None,
        rng.standard_normal(c).astype(param),
        rng.uniform(0.5, 2, c).astype(param),
        save_mean,
        save_invstd,
    ], layout


def _tensor(lib, array, layout: str):
    if array is None:
        return None
    if array.ndim == 4 and layout == "channels_last":
        nhwc = np.ascontiguousarray(array.transpose(0, 2, 3, 1))
        return lib.from_numpy(nhwc).permute(0, 3, 1, 2)
    if array.ndim >= 3 and layout == "strided":  # every other position of the last dim
        doubled = np.repeat(array, 2, axis=-1)
        return lib.from_numpy(doubled)[..., ::2]
    return lib.from_numpy(array)


CASES = [
    ((16, 8, 12, 12), "float32", "contiguous", True),
    ((4, 3, 5, 6), "float64", "channels_last", True),
    ((4, 3, 5), "float64", "strided", False),
    ((6, 4), "float32", "contiguous", True),
    ((3, 4, 6, 5), "float16", "contiguous", True),
]


@needs_torch
@pytest.mark.parametrize("mask", [(True, True, True), (True, False, False), (False, True, True)])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("path", ["kernel", "decomposition"])
def test_matches_pytorch(path, case, train, mask):
    shape, dtype, layout, weight = CASES[case]
    arrays, layout = _case(shape, dtype, layout, weight, seed=case)
    mask = [mask[0], mask[1] and weight, mask[2]]
    ours_args = [_tensor(ember, a, layout) for a in arrays]
    theirs_args = [_tensor(torch, a, layout) for a in arrays]
    call = OP if path == "kernel" else OP.decomposition
    ours = call(*ours_args, train, 1e-5, mask)
    theirs = torch.ops.aten.native_batch_norm_backward(*theirs_args, train, 1e-5, mask)

    def tolerance(i, b):
        rtol, atol = TOLERANCES[dtype if i == 0 else str(b.dtype).split(".")[-1]]
        scale = 1 if i == 0 else 10  # per-channel sums over hundreds of products
        return rtol * scale, atol * scale

    assert_masked_results_match(ours, theirs, mask, tolerance, strides=path == "kernel")


@pytest.mark.parametrize("case", range(len(CASES)))
def test_meta_matches_the_kernel(case):
    shape, dtype, layout, weight = CASES[case]
    arrays, layout = _case(shape, dtype, layout, weight, seed=case)
    real = [_tensor(ember, a, layout) for a in arrays]
    meta = [None if t is None else t.to("meta") for t in real]
    mask = [True, weight, True]
    for a, b in zip(OP(*real, True, 1e-5, mask), OP(*meta, True, 1e-5, mask), strict=True):
        if a is None:
            assert b is None
            continue
        assert (tuple(a.shape), a.stride(), a.dtype) == (tuple(b.shape), b.stride(), b.dtype)


def test_errors():
    g, x = ember.randn(4, 3, 5), ember.randn(4, 3, 5)
    stats = [ember.zeros(3), ember.ones(3)]
    with pytest.raises(RuntimeError, match="save_mean and save_invstd must be defined"):
        OP(g, x, None, *stats, None, None, True, 1e-5, [True, False, False])
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        OP(g, x, None, None, None, *stats, False, 1e-5, [True, False, False])
    with pytest.raises(RuntimeError, match="does not match input"):
        OP(ember.randn(4, 3, 4), x, None, *stats, *stats, True, 1e-5, [True, False, False])
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        OP(g.long(), x.long(), None, *stats, *stats, True, 1e-5, [True, False, False])


def test_empty_batch_gives_zero_gradients():
    # (PyTorch 2.13's CPU kernel dies of a division by zero here, so there is no oracle to ask.)
    g, x = ember.zeros(0, 3, 4, 4), ember.zeros(0, 3, 4, 4)
    stats = [ember.zeros(3), ember.ones(3)]
    for path in (OP, OP.decomposition):
        grads = path(g, x, ember.ones(3), *stats, *stats, True, 1e-5, [True, True, True])
        assert [tuple(t.shape) for t in grads] == [(0, 3, 4, 4), (3,), (3,)]
        assert all(not t.numpy().any() for t in grads)
