"""``optim.swa_utils`` against PyTorch's: the averaged weights after several updates, the SWALR rate
sequence, and the batch-norm statistics ``update_bn`` recomputes."""

from __future__ import annotations

import numpy as np
import pytest
from nn_harness import assert_close, copy_weights, needs_torch, torch

import ember
import ember.optim as eoptim
from ember.optim import swa_utils

pytestmark = needs_torch


def _models():
    def build(nn):
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))

    theirs = build(torch.nn)
    ours = build(ember.nn)
    copy_weights(theirs, ours)
    return ours, theirs


def _perturb(ours, theirs, rng) -> None:
    """Move both models' weights the same way, and run a training batch to move the BN statistics."""
    with torch.no_grad():
        for q in theirs.parameters():
            q.add_(torch.from_numpy(rng.standard_normal(tuple(q.shape)).astype(np.float32)) * 0.1)
    batch = rng.standard_normal((5, 3)).astype(np.float32)
    theirs.train()(torch.from_numpy(batch))
    copy_weights(theirs, ours)


AVERAGES = [
    ("swa", lambda m: dict()),
    ("ema-multi", lambda m: dict(multi_avg_fn=m.get_ema_multi_avg_fn(0.9))),
    ("ema", lambda m: dict(avg_fn=m.get_ema_avg_fn(0.8))),
    ("swa-multi", lambda m: dict(multi_avg_fn=m.get_swa_multi_avg_fn())),
    ("ema-multi-buffers", lambda m: dict(multi_avg_fn=m.get_ema_multi_avg_fn(0.6), use_buffers=True)),
    ("ema-buffers", lambda m: dict(avg_fn=m.get_ema_avg_fn(0.7), use_buffers=True)),
]


@pytest.mark.parametrize("name,kwargs", AVERAGES, ids=[a[0] for a in AVERAGES])
def test_averaged_model_matches_torch(name, kwargs):
    rng = np.random.default_rng(0)
    ours, theirs = _models()
    ours_avg = swa_utils.AveragedModel(ours, **kwargs(swa_utils))
    theirs_avg = torch.optim.swa_utils.AveragedModel(theirs, **kwargs(torch.optim.swa_utils))
    for _ in range(6):
        _perturb(ours, theirs, rng)
        ours_avg.update_parameters(ours)
        theirs_avg.update_parameters(theirs)
    mine, ref = ours_avg.state_dict(), theirs_avg.state_dict()
    assert list(mine) == list(ref)
    for key, value in ref.items():
        assert_close(mine[key], value, rtol=1e-5, atol=1e-6)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    ours_avg.eval()
    theirs_avg.eval()
    assert_close(ours_avg(ember.tensor(x)), theirs_avg(torch.from_numpy(x)), rtol=1e-5, atol=1e-5)


def test_update_bn_matches_torch():
    rng = np.random.default_rng(1)
    ours, theirs = _models()
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(4)]
    swa_utils.update_bn([(ember.tensor(b), 0) for b in batches], ours)
    torch.optim.swa_utils.update_bn([(torch.from_numpy(b), 0) for b in batches], theirs)
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key], value, rtol=1e-5, atol=1e-6)
    assert ours[1].momentum == theirs[1].momentum == 0.1


SWALRS = [
    dict(swa_lr=0.05),
    dict(swa_lr=[0.02, 0.2], anneal_epochs=4, anneal_strategy="linear"),
    dict(swa_lr=0.01, anneal_epochs=0),
    dict(swa_lr=0.3, anneal_epochs=7, anneal_strategy="cos"),
]


@pytest.mark.parametrize("kwargs", SWALRS, ids=str)
def test_swalr_rates_match_torch(kwargs):
    ours_opt = eoptim.SGD([{"params": [ember.nn.Parameter(ember.ones(2))]},
                           {"params": [ember.nn.Parameter(ember.ones(1))], "lr": 0.5}], lr=0.1)  # fmt: skip
    theirs_opt = torch.optim.SGD([{"params": [torch.nn.Parameter(torch.ones(2))]},
                                  {"params": [torch.nn.Parameter(torch.ones(1))], "lr": 0.5}], lr=0.1)  # fmt: skip
    ours = swa_utils.SWALR(ours_opt, **kwargs)
    theirs = torch.optim.swa_utils.SWALR(theirs_opt, **kwargs)
    assert ours.get_last_lr() == theirs.get_last_lr()
    for _ in range(20):
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        assert ours.get_last_lr() == theirs.get_last_lr()
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    again = swa_utils.SWALR(ours_opt, swa_lr=1.0)
    again.load_state_dict(ours.state_dict())
    assert again.anneal_func is ours.anneal_func


@pytest.mark.parametrize(
    "call",
    [
        lambda m, opt: m.get_ema_multi_avg_fn(1.5),
        lambda m, opt: m.get_ema_avg_fn(-0.1),
        lambda m, opt: m.SWALR(opt, swa_lr=0.1, anneal_strategy="step"),
        lambda m, opt: m.SWALR(opt, swa_lr=0.1, anneal_epochs=-1),
        lambda m, opt: m.SWALR(opt, swa_lr=[0.1, 0.2]),
    ],
)
def test_errors_match_torch(call):
    with pytest.raises(ValueError) as theirs:
        call(torch.optim.swa_utils, torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1))
    with pytest.raises(ValueError) as ours:
        call(swa_utils, eoptim.SGD([ember.nn.Parameter(ember.ones(1))], lr=0.1))
    assert str(ours.value) == str(theirs.value)


def test_averaged_model_refuses_two_averaging_functions():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        swa_utils.AveragedModel(
            ember.nn.Linear(1, 1), avg_fn=swa_utils.get_swa_avg_fn(), multi_avg_fn=swa_utils.get_swa_multi_avg_fn()
        )
