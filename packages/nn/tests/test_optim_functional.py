"""The functional forms (``ember.optim.adam.adam``, ...) against PyTorch's: the same lists of
parameters, gradients and state, updated in place the same way, on the loop and foreach paths."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from nn_harness import assert_close, needs_torch, torch

import ember

pytestmark = needs_torch

SHAPES = [(3, 4), (5,)]

# (module, function, state lists before state_steps, whether it takes state_steps, keyword arguments)
FORMS = [
    ("adadelta", "adadelta", ["zeros", "zeros"], True, dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.1, maximize=False)),
    ("adamax", "adamax", ["zeros", "zeros"], True, dict(eps=1e-8, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0.0)),
    ("nadam", "nadam", ["zeros", "zeros", "one"], True,
     dict(beta1=0.9, beta2=0.999, lr=0.01, weight_decay=0.1, momentum_decay=0.004, eps=1e-8)),
    ("radam", "radam", ["zeros", "zeros"], True, dict(beta1=0.9, beta2=0.999, lr=0.01, weight_decay=0.0, eps=1e-8)),
    ("rprop", "rprop", ["zeros", "lr"], True, dict(step_size_min=1e-6, step_size_max=50, etaminus=0.5, etaplus=1.2)),
    ("asgd", "asgd", ["zeros", "one", "eta"], True, dict(lambd=1e-4, lr=0.01, t0=2, alpha=0.75, weight_decay=0.0)),
    ("adam", "adam", ["zeros", "zeros", "zeros"], True,
     dict(amsgrad=True, beta1=0.9, beta2=0.999, lr=0.01, weight_decay=0.1, eps=1e-8, maximize=False)),
    ("adamw", "adamw", ["zeros", "zeros", "zeros"], True,
     dict(amsgrad=False, beta1=0.9, beta2=0.999, lr=0.01, weight_decay=0.1, eps=1e-8, maximize=True)),
    ("sgd", "sgd", ["none"], False, dict(weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True,
                                         maximize=False)),
    ("adagrad", "adagrad", ["lr"], True, dict(lr=0.1, weight_decay=0.0, lr_decay=0.01, eps=1e-10, maximize=False)),
    ("rmsprop", "rmsprop", ["zeros", "zeros", "zeros"], True,
     dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.5, centered=True)),
]  # fmt: skip


def _lists(lib, arrays, kinds, with_steps):
    tensor = lib.tensor
    params = [tensor(a.copy()) for a in arrays]
    lists = []
    for kind in kinds:
        if kind == "zeros":
            lists.append([lib.zeros_like(p) for p in params])
        elif kind == "one":
            lists.append([tensor(1.0) for _ in params])
        elif kind == "eta":
            lists.append([tensor(0.01) for _ in params])
        elif kind == "lr":
            lists.append([lib.full_like(p, 0.01) for p in params])
        else:
            lists.append([None for _ in params])
    if with_steps:
        lists.append([tensor(0.0) for _ in params])
    return params, lists


@pytest.mark.parametrize("foreach", [False, True], ids=["loop", "foreach"])
@pytest.mark.parametrize("module,name,kinds,with_steps,kwargs", FORMS, ids=[f[1] for f in FORMS])
def test_functional_form_matches_torch(module, name, kinds, with_steps, kwargs, foreach):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours_fn = getattr(importlib.import_module(f"ember.optim.{module}"), name)
    theirs_fn = getattr(importlib.import_module(f"torch.optim.{module}"), name)
    ours, ours_lists = _lists(ember, arrays, kinds, with_steps)
    theirs, theirs_lists = _lists(torch, arrays, kinds, with_steps)
    for _ in range(5):
        grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        ours_fn(ours, [ember.tensor(g) for g in grads], *ours_lists, foreach=foreach, **kwargs)
        theirs_fn(theirs, [torch.from_numpy(g) for g in grads], *theirs_lists, foreach=foreach, **kwargs)
    for p, q in zip(ours, theirs, strict=True):
        assert_close(p, q, rtol=1e-5, atol=1e-6)
    for mine, ref in zip(ours_lists, theirs_lists, strict=True):
        for m, r in zip(mine, ref, strict=True):
            assert_close(m, r, rtol=1e-5, atol=1e-6)


def test_functional_forms_refuse_plain_step_counts():
    from ember.optim.adadelta import adadelta

    p = ember.ones(2)
    with pytest.raises(RuntimeError, match="`state_steps` argument must contain a list of singleton tensors"):
        adadelta([p], [p], [p], [p], [1], lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False)
