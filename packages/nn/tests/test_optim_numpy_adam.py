"""Adam's NumPy update (``ember.optim._adam_numpy``) against the op-by-op path it replaces: the same
parameters, gradients and settings give bit-identical parameters and state, step after step; the
update steps aside for tensors and settings it does not cover. (Both paths are compared with
PyTorch in test_optim.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.optim as eoptim
from ember.nn import Parameter
from ember.optim import _adam_numpy, adam

SHAPES = [(3, 4), (5,), (2, 2, 3), ()]
CASES = [
    ("Adam", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.05, betas=(0.3, 0.99), eps=1e-3, weight_decay=0.2)),  # lerp weight >= 0.5
    ("Adam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
]


def _run(name, kwargs, dtype, fast: bool, monkeypatch):
    rng = np.random.default_rng(5)
    params = [Parameter(ember.tensor(rng.standard_normal(s).astype(dtype))) for s in SHAPES]
    opt = getattr(eoptim, name)(params, **kwargs)
    calls = []
    real = adam.numpy_adam_step

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(adam, "qualifies", _adam_numpy.qualifies if fast else lambda *a: False)
    monkeypatch.setattr(adam, "numpy_adam_step", counted)
    for _ in range(4):
        for p in params:
            p.grad = ember.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
    assert len(calls) == (4 * len(SHAPES) if fast else 0)
    return params, opt


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_numpy_update_is_bit_identical_to_the_ops(name, kwargs, dtype, monkeypatch):
    fast_params, fast_opt = _run(name, kwargs, dtype, True, monkeypatch)
    slow_params, slow_opt = _run(name, kwargs, dtype, False, monkeypatch)
    for p, q in zip(fast_params, slow_params, strict=True):
        assert p.dtype == q.dtype
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), strict=True)
        for key in ("step", "exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(fast_opt.state[p][key].numpy(), slow_opt.state[q][key].numpy(), strict=True)


def test_version_counters_move_as_with_the_ops(monkeypatch):
    versions = []
    for fast in (True, False):
        params, opt = _run("AdamW", dict(lr=0.01), np.float32, fast, monkeypatch)
        state = opt.state[params[0]]
        versions.append((params[0]._version, state["exp_avg"]._version, state["exp_avg_sq"]._version))
    assert versions[0] == versions[1]


def test_other_tensors_take_the_ops():
    p = Parameter(ember.ones(4))
    dense = ember.zeros(4)
    assert _adam_numpy.qualifies(p, dense, ember.zeros(4), ember.zeros(4))
    strided = ember.zeros(8)[::2]
    assert not _adam_numpy.qualifies(p, strided, dense, dense)
    assert not _adam_numpy.qualifies(p, dense.double(), dense, dense)
    assert not _adam_numpy.qualifies(
        Parameter(ember.ones(4, dtype=ember.float16)), *[ember.zeros(4, dtype=ember.float16)] * 3
    )
    assert not _adam_numpy.qualifies(p, ember.zeros(4, requires_grad=True), dense, dense)
    assert not _adam_numpy.qualifies(p, ember.zeros(2, 2), dense, dense)
