"""A pre-LN GPT block and a small CNN (batch norm, max pool, cross-entropy) under ``ember.compile``,
forward and backward: losses, gradients and batch norm's running statistics as eager's.

Compiled float32 is held to a float64 eager run of the same model: it must be about as close to it
as float32 eager is (kernels sum in another order than eager's, so the two float32 runs differ).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

EXTERN = ("GEMM", "convolution", "attention")


class Block(nn.Module):
    def __init__(self, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def small_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10),
    )  # fmt: skip


def _case(name):
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "gpt":
        model = Block()
        x = rng.standard_normal((2, 16, 32))
        return model, (x,), lambda m, a: (m(a) ** 2).mean()
    model = small_cnn()
    x, y = rng.standard_normal((4, 3, 16, 16)), rng.integers(0, 10, (4,))
    return model, (x, y), lambda m, a, b: F.cross_entropy(m(a), b)


def _step(model, loss_fn, arrays, dtype):
    inputs = [ember.tensor(a.astype(dtype) if a.dtype.kind == "f" else a) for a in arrays]
    loss = loss_fn(model, *inputs)
    loss.backward()
    state = [b.detach().numpy().astype(np.float64) for b in model.buffers() if b.dtype.is_floating_point]
    grads = [p.grad.numpy().astype(np.float64) for p in model.parameters()]
    return float(loss), grads, state


@pytest.mark.parametrize("name", ["gpt", "cnn"])
def test_forward_and_backward_match_eager(name):
    model, arrays, loss_fn = _case(name)
    reference = copy.deepcopy(model).to(ember.float64)
    twin = copy.deepcopy(model)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return ember.inductor.compile_fx(gm, example_inputs)

    compiled = ember.compile(twin, backend=backend)
    want = _step(reference, loss_fn, arrays, np.float64)
    eager = _step(model, loss_fn, arrays, np.float32)
    got = _step(compiled, loss_fn, arrays, np.float32)
    assert graphs, "nothing was compiled"
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, e, w in zip(got[1] + got[2], eager[1] + eager[2], want[1] + want[2], strict=True):
        eager_err = np.abs(e - w).max()
        scale = np.abs(w).max() + 1e-30
        # (a gradient that is 0 in exact arithmetic, a conv bias before batch norm, gets the floor)
        assert np.abs(g - w).max() <= max(4 * eager_err, 1e-5 * scale, 1e-6), (np.abs(g - w).max(), eager_err)


@pytest.mark.parametrize("name", ["gpt", "cnn"])
def test_only_gemms_convolutions_and_attention_run_eagerly(name, capfd):
    from inductor_testing import Recorder

    from ember.aot.aot_autograd import aot_module_simplified
    from ember.inductor.compile_fx import _inductor_decompositions

    model, arrays, loss_fn = _case(name)
    rec = Recorder()

    def backend(gm, example_inputs):
        return aot_module_simplified(
            gm, example_inputs, fw_compiler=rec, bw_compiler=rec, decompositions=_inductor_decompositions()
        )

    compiled = ember.compile(model, backend=backend)
    inputs = [ember.tensor(a.astype(np.float32) if a.dtype.kind == "f" else a) for a in arrays]
    ember.logs.set_logs(perf_hints=True)
    try:
        loss_fn(compiled, *inputs).backward()
    finally:
        ember.logs.set_logs()
    # the heads the forward saves for attention's backward are views of the projection, as in eager:
    # the backward gets them with the strides it was traced with, and copies none
    assert "copied from strides" not in capfd.readouterr().err
    assert len(rec.graphs) == 2
    for graph in rec.graphs:
        for op, reason in graph.fallbacks:
            assert any(kind in reason for kind in EXTERN), (op, reason)
