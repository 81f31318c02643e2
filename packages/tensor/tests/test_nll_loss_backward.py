"""``nll_loss_backward`` against PyTorch's: its CPU kernel and its decomposition, for (C,), (N, C) and
(N, C, d1, ...) inputs (PyTorch's ``nll_loss2d_backward`` for 4-D ones), class weights, an
``ignore_index`` that occurs, each reduction, float64, float32 and float16, a gradient with nan
and inf (which must not reach ignored rows), a mean over no counted rows; its meta kernel; its
errors; and the double backward of cross-entropy through it."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, TOLERANCES, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
OP = ember.ops.aten.nll_loss_backward.default
NONE, MEAN, SUM = 0, 1, 2

CASES = [  # (input shape, weighted, ignore_index)
    ((7,), False, -100),
    ((5, 6), False, -100),
    ((5, 6), True, 2),
    ((3, 4, 2, 5), True, 1),
    ((3, 4, 2, 5), False, -100),
]


def _arrays(case, dtype: str, reduction: int, seed: int = 0):
    shape, weighted, ignore_index = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0], *shape[2:])
    target = rng.integers(0, classes, target_shape)
    weight = (rng.random(classes) + 0.5).astype(dtype) if weighted else None
    grad_shape = target_shape if reduction == NONE else ()
    grad = rng.standard_normal(grad_shape).astype(dtype)
    return x, target, weight, grad, ignore_index


def _torch_grad(x, target, weight, grad, reduction, ignore_index):
    t = lambda a: None if a is None else torch.from_numpy(np.asarray(a))  # noqa: E731
    tx, tt, tw, tg = t(x), t(target), t(weight), t(grad)
    if x.ndim == 4:
        _, total = torch.ops.aten.nll_loss2d_forward(tx, tt, tw, reduction, ignore_index)
        return torch.ops.aten.nll_loss2d_backward(tg, tx, tt, tw, reduction, ignore_index, total)
    _, total = torch.ops.aten.nll_loss_forward(tx, tt, tw, reduction, ignore_index)
    return torch.ops.aten.nll_loss_backward(tg, tx, tt, tw, reduction, ignore_index, total)


def _ember_grad(call, x, target, weight, grad, reduction, ignore_index):
    e = lambda a: None if a is None else ember.from_numpy(np.asarray(a))  # noqa: E731
    ex, et, ew, eg = e(x), e(target), e(weight), e(grad)
    _, total = ember.ops.aten.nll_loss_forward(ex, et, ew, reduction, ignore_index)
    return call(eg, ex, et, ew, reduction, ignore_index, total)


@needs_torch
@pytest.mark.parametrize("reduction", [NONE, MEAN, SUM], ids=["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("path", ["kernel", "decomposition"])
def test_matches_pytorch(path, case, dtype, reduction):
    arrays = _arrays(CASES[case], dtype, reduction, seed=case)
    call = OP if path == "kernel" else OP.decomposition
    ours = _ember_grad(call, *arrays[:4], reduction, arrays[4])
    theirs = _torch_grad(*arrays[:4], reduction, arrays[4])
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64), rtol=rtol, atol=atol)


@needs_torch
@pytest.mark.parametrize("path", ["kernel", "decomposition"])
def test_nan_and_inf_gradients_stay_on_counted_rows(path):
    x, target, weight, _, _ = _arrays(CASES[2], "float32", NONE)
    target[:2] = 2  # the ignored class
    grad = np.array([np.nan, np.inf, np.nan, -np.inf, 1.5], np.float32)
    call = OP if path == "kernel" else OP.decomposition
    ours = _ember_grad(call, x, target, weight, grad, NONE, 2)
    theirs = _torch_grad(x, target, weight, grad, NONE, 2)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@needs_torch
@pytest.mark.parametrize("path", ["kernel", "decomposition"])
def test_a_mean_over_no_counted_rows(path):
    x, target, _, grad, _ = _arrays(CASES[1], "float32", MEAN)
    target[:] = 3
    call = OP if path == "kernel" else OP.decomposition
    ours = _ember_grad(call, x, target, None, grad, MEAN, 3)
    np.testing.assert_array_equal(ours.numpy(), _torch_grad(x, target, None, grad, MEAN, 3).numpy())


@pytest.mark.parametrize("case", range(len(CASES)))
def test_meta_matches_the_kernel(case):
    x, target, weight, grad, ignore_index = _arrays(CASES[case], "float32", MEAN)
    e = lambda a: None if a is None else ember.from_numpy(np.asarray(a))  # noqa: E731
    args = (e(grad), e(x), e(target), e(weight))
    _, total = ember.ops.aten.nll_loss_forward(args[1], args[2], args[3], MEAN, ignore_index)
    real = OP(*args, MEAN, ignore_index, total)
    meta = OP(*(None if a is None else a.to("meta") for a in args), MEAN, ignore_index, total.to("meta"))
    assert (tuple(real.shape), real.stride(), real.dtype) == (tuple(meta.shape), meta.stride(), meta.dtype)


def test_errors():
    x, target, _, grad, _ = _arrays(CASES[1], "float32", NONE)
    e = ember.from_numpy
    total = ember.tensor(5.0)
    with pytest.raises(RuntimeError, match="expected grad_output of shape"):
        OP(e(grad[:3]), e(x), e(target), None, NONE, -100, total)
    with pytest.raises(RuntimeError, match="single element tensor"):
        OP(e(grad), e(x), e(target), None, NONE, -100, ember.ones(2))
    with pytest.raises(IndexError, match="out of bounds"):
        OP(e(grad), e(x), e(target + 6), None, NONE, -100, total)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        OP(e(grad), e(x), e(target), None, 5, -100, total)


@needs_torch
def test_cross_entropy_double_backward_matches_pytorch():
    # The backward of the backward runs through the decomposition.
    rng = np.random.default_rng(5)
    x, target = rng.standard_normal((4, 5)), rng.integers(0, 5, (4,))
    weight = rng.random(5) + 0.5
    results = []
    for lib in (ember, torch):
        t = lib.from_numpy(x.copy()).requires_grad_()
        loss = lib.nn.functional.cross_entropy(t, lib.from_numpy(target), weight=lib.from_numpy(weight))
        (g,) = lib.autograd.grad(loss, t, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), t)
        results.append((g.detach().numpy(), gg.numpy()))
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
