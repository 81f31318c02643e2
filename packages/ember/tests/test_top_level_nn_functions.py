"""ATen's top-level neural-network functions without the oracle: where they come from, and what
PyTorch's CUDA kernels define that its CPU build cannot show (statistics of half inputs in float32)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest

import ember

NAMES = {
    "ember._nn_batch_norm": [
        "batch_norm_backward_elemt",
        "batch_norm_backward_reduce",
        "batch_norm_elemt",
        "batch_norm_gather_stats",
        "batch_norm_gather_stats_with_counts",
        "batch_norm_stats",
        "batch_norm_update_stats",
        "instance_norm",
        "native_batch_norm",
        "native_norm",
        "norm_except_dim",
    ],
    "ember._nn_aten_forms": [
        "affine_grid_generator",
        "conv_tbc",
        "convolution",
        "embedding_bag",
        "feature_dropout",
        "feature_dropout_",
        "grid_sampler",
        "grid_sampler_2d",
        "grid_sampler_3d",
    ],
    "ember._nn_recurrent": ["gru", "lstm", "rnn_relu", "rnn_tanh"],
}


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in NAMES.items() for n in names])
def test_each_name_is_its_modules(module, name):
    assert name in dir(ember)
    assert getattr(ember, name) is getattr(importlib.import_module(module), name)


def test_importing_ember_leaves_them_unimported():
    code = "import sys, ember; print([m for m in ('ember._nn_batch_norm', 'ember._nn_aten_forms', 'ember._nn_recurrent', 'ember.nn') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_statistics_of_half_inputs_are_float32(dtype):
    x = ember.randn(4, 3, 5).to(dtype)
    mean, invstd = ember.batch_norm_stats(x, 1e-5)
    assert mean.dtype == invstd.dtype == ember.float32
    values = x.to(ember.float32).numpy()
    np.testing.assert_allclose(mean.numpy(), values.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(values.var((0, 2)) + 1e-5), rtol=1e-5)
    assert ember.batch_norm_elemt(x, None, None, mean, invstd, 1e-5).dtype == dtype


def test_packed_form_runs_each_sequence_alone():
    # A packed batch of sequences of lengths 3, 2 and 1 gives each sequence's own run.
    rng = np.random.default_rng(0)
    params = [ember.tensor(rng.standard_normal(s)) for s in ((8, 3), (8, 2), (8,), (8,))]
    seqs = [ember.tensor(rng.standard_normal((n, 3))) for n in (3, 2, 1)]
    h0 = ember.tensor(rng.standard_normal((1, 3, 2)))
    c0 = ember.tensor(rng.standard_normal((1, 3, 2)))
    data = ember.cat([ember.stack([s[t] for s in seqs if s.shape[0] > t]) for t in range(3)])
    out, h, c = ember.lstm(data, ember.tensor([3, 2, 1]), (h0, c0), params, True, 1, 0.0, False, False)
    rows = iter(range(6))
    packed_rows = {(t, b): next(rows) for t in range(3) for b in range(3) if seqs[b].shape[0] > t}
    for b, seq in enumerate(seqs):
        alone, h_b, c_b = ember.lstm(
            seq.unsqueeze(1), (h0[:, b : b + 1], c0[:, b : b + 1]), params, True, 1, 0.0, False, False, False
        )
        for t in range(seq.shape[0]):
            np.testing.assert_allclose(out[packed_rows[t, b]].numpy(), alone[t, 0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(h[:, b].numpy(), h_b[:, 0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(c[:, b].numpy(), c_b[:, 0].numpy(), rtol=1e-12)


def test_packed_form_checks_its_batch_sizes():
    params = [ember.zeros(2, 3), ember.zeros(2, 2), ember.zeros(2), ember.zeros(2)]
    h = ember.zeros(1, 2, 2)
    with pytest.raises(RuntimeError, match="non-increasing"):
        ember.rnn_tanh(ember.zeros(3, 3), ember.tensor([1, 2]), h, params, True, 1, 0.0, False, False)
    with pytest.raises(RuntimeError, match="sum to 3"):
        ember.rnn_tanh(ember.zeros(4, 3), ember.tensor([2, 1]), h, params, True, 1, 0.0, False, False)
