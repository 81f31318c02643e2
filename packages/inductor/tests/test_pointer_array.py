"""A kernel call's pointer array: each tensor's data_ptr(), with or without the C fast path."""

from __future__ import annotations

import ember
from ember.inductor import pointers


def _tensors():
    base = ember.arange(12.0).reshape(3, 4)
    return [base, base[1:], base.t(), ember.nn.Parameter(ember.ones(2)), ember.zeros(0)]


def test_pointer_array_holds_each_data_ptr():
    tensors = _tensors()
    assert [p or 0 for p in pointers.pointer_array(tensors)] == [t.data_ptr() for t in tensors]


def test_pointer_array_without_the_extension(monkeypatch):
    monkeypatch.setattr(pointers, "_fill", None)
    tensors = _tensors()
    assert [p or 0 for p in pointers.pointer_array(tensors)] == [t.data_ptr() for t in tensors]


def test_a_compiled_optimizer_step_equals_eager():
    import numpy as np

    def params():
        rng = np.random.default_rng(0)
        out = []
        for _ in range(4):
            p = ember.nn.Parameter(ember.tensor(rng.standard_normal((8, 8)).astype("float32")))
            p.grad = ember.tensor(rng.standard_normal((8, 8)).astype("float32"))
            out.append(p)
        return out

    compiled, eager = params(), params()
    step = ember.compile(ember.optim.AdamW(compiled, lr=0.1).step)
    eager_opt = ember.optim.AdamW(eager, lr=0.1)
    for _ in range(3):
        step()
        eager_opt.step()
    for a, b in zip(compiled, eager, strict=True):
        np.testing.assert_allclose(
            a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5
        )  # float32: the fused update rounds in its own order
