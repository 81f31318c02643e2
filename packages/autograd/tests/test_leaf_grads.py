"""A leaf's first ``.grad`` and a broadcast input's gradient, on the paths every training step takes:
values, layout and independence from the gradient they came from, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _leaves(lib, *arrays):
    return [lib.from_numpy(a.copy()).requires_grad_(True) for a in arrays]


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_and_weight_grads_match_pytorch(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 5)).astype(dtype)
    arrays = (rng.standard_normal((5, 4)).astype(dtype), rng.standard_normal(4).astype(dtype))
    grads = []
    for lib in (ember, torch):
        w, b = _leaves(lib, *arrays)
        (lib.from_numpy(x.copy()).mm(w) + b).tanh().sum().backward()
        grads.append((w.grad, b.grad))
    for ours, theirs in zip(grads[0], grads[1], strict=True):
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_first_grad_owns_its_memory():
    # The gradient reaching the leaf is the caller's own tensor here: .grad must be a copy of it.
    w = ember.ones(3, 2).requires_grad_(True)
    seed = ember.full((3, 2), 2.0)
    (w * 1.0).backward(seed)
    seed.add_(1.0)
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 2.0, np.float32))
    w.grad.zero_()
    np.testing.assert_array_equal(seed.numpy(), np.full((3, 2), 3.0, np.float32))


@needs_torch
def test_grad_of_a_transposed_leaf_keeps_its_strides():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    results = []
    for lib in (ember, torch):
        leaf = lib.from_numpy(data.copy()).t().detach().requires_grad_(True)
        (leaf * 2.0).sum().backward()
        results.append(leaf.grad)
    assert results[0].stride() == results[1].stride()
    np.testing.assert_array_equal(results[0].numpy(), results[1].numpy())
