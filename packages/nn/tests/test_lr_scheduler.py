"""Learning-rate schedulers against PyTorch's: the same sequence of rates, bit for bit."""

from __future__ import annotations

import pytest
from nn_harness import needs_torch, torch

import ember
import ember.optim as eoptim
from ember.nn import Parameter


def _lambda(epoch):
    return 0.9**epoch


SCHEDULERS = [
    ("StepLR", lambda opt, m: m.StepLR(opt, step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda opt, m: m.MultiStepLR(opt, milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", lambda opt, m: m.ExponentialLR(opt, gamma=0.93)),
    ("CosineAnnealingLR", lambda opt, m: m.CosineAnnealingLR(opt, T_max=5, eta_min=0.001)),
    ("LambdaLR", lambda opt, m: m.LambdaLR(opt, _lambda)),
    ("LinearLR", lambda opt, m: m.LinearLR(opt, start_factor=0.25, total_iters=6)),
    ("MultiplicativeLR", lambda opt, m: m.MultiplicativeLR(opt, lambda epoch: 0.95)),
    ("ConstantLR", lambda opt, m: m.ConstantLR(opt, factor=0.5, total_iters=4)),
    ("PolynomialLR", lambda opt, m: m.PolynomialLR(opt, total_iters=8, power=2.0)),
    ("OneCycleLR", lambda opt, m: m.OneCycleLR(opt, max_lr=0.5, total_steps=16)),
    ("OneCycleLR-3phase", lambda opt, m: m.OneCycleLR(opt, max_lr=[0.5, 0.2], total_steps=16, three_phase=True,
                                                      anneal_strategy="linear")),
    ("SequentialLR", lambda opt, m: m.SequentialLR(
        opt, [m.LinearLR(opt, start_factor=0.1, total_iters=3), m.CosineAnnealingLR(opt, T_max=6)], milestones=[4])),
]  # fmt: skip


def _optimizers():
    ours = eoptim.SGD([{"params": [Parameter(ember.ones(2))]}, {"params": [Parameter(ember.ones(1))], "lr": 0.05}],
                      lr=0.1, momentum=0.9)  # fmt: skip
    theirs = torch.optim.SGD(
        [{"params": [torch.nn.Parameter(torch.ones(2))]}, {"params": [torch.nn.Parameter(torch.ones(1))], "lr": 0.05}],
        lr=0.1,
        momentum=0.9,
    )
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("name,build", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_rates_match_torch(name, build):
    ours_opt, theirs_opt = _optimizers()
    ours, theirs = build(ours_opt, eoptim.lr_scheduler), build(theirs_opt, torch.optim.lr_scheduler)
    assert ours.get_last_lr() == theirs.get_last_lr()
    for _ in range(15):
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        assert ours.get_last_lr() == theirs.get_last_lr()
        assert [g["momentum"] for g in ours_opt.param_groups] == [g["momentum"] for g in theirs_opt.param_groups]
    mine, ref = ours.state_dict(), theirs.state_dict()
    assert sorted(mine) == sorted(ref)


class _HalvingScale:
    """A callable object as ``scale_fn``: its ``__dict__`` is what the state dict saves."""

    def __init__(self) -> None:
        self.base = 0.5

    def __call__(self, x):
        return self.base**x


CYCLIC = [
    ("CyclicLR", lambda opt, m: m.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("CyclicLR-triangular2", lambda opt, m: m.CyclicLR(opt, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3,
                                                       step_size_down=5, mode="triangular2")),
    ("CyclicLR-exp_range", lambda opt, m: m.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range",
                                                     gamma=0.97, base_momentum=0.7, max_momentum=0.95)),
    ("CyclicLR-scale_fn", lambda opt, m: m.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                    scale_fn=_HalvingScale(), scale_mode="iterations",
                                                    cycle_momentum=False)),
    ("CosineAnnealingWarmRestarts", lambda opt, m: m.CosineAnnealingWarmRestarts(opt, T_0=5)),
    ("CosineAnnealingWarmRestarts-mult", lambda opt, m: m.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2,
                                                                                     eta_min=0.001)),
    ("ChainedScheduler", lambda opt, m: m.ChainedScheduler(
        [m.ConstantLR(opt, factor=0.1, total_iters=2), m.ExponentialLR(opt, gamma=0.9)])),
    ("ChainedScheduler-cosine", lambda opt, m: m.ChainedScheduler(
        [m.LinearLR(opt, start_factor=0.2, total_iters=5), m.CosineAnnealingLR(opt, T_max=7)], optimizer=opt)),
]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("name,build", CYCLIC, ids=[s[0] for s in CYCLIC])
def test_cyclic_and_chained_rates_match_torch_over_several_cycles(name, build):
    ours_opt, theirs_opt = _optimizers()
    ours, theirs = build(ours_opt, eoptim.lr_scheduler), build(theirs_opt, torch.optim.lr_scheduler)
    assert ours.get_last_lr() == theirs.get_last_lr()
    for _ in range(40):
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        assert ours.get_last_lr() == theirs.get_last_lr()
        assert [g["momentum"] for g in ours_opt.param_groups] == [g["momentum"] for g in theirs_opt.param_groups]
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    # A fresh scheduler given the state dict continues the same sequence.
    again_opt, _ = _optimizers()
    again = build(again_opt, eoptim.lr_scheduler)
    again.load_state_dict(ours.state_dict())
    for group, saved in zip(again_opt.param_groups, ours_opt.param_groups, strict=True):
        group["lr"] = saved["lr"]
    again_opt.step()
    ours_opt.step()
    again.step()
    ours.step()
    assert again.get_last_lr() == ours.get_last_lr()


@needs_torch
def test_cyclic_lr_cycles_adam_betas_like_torch():
    ours_opt = eoptim.Adam([Parameter(ember.ones(2))], lr=0.1)
    theirs_opt = torch.optim.Adam([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    kwargs = dict(base_lr=0.001, max_lr=0.01, step_size_up=3)
    ours = eoptim.lr_scheduler.CyclicLR(ours_opt, **kwargs)
    theirs = torch.optim.lr_scheduler.CyclicLR(theirs_opt, **kwargs)
    for _ in range(10):
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        assert ours.get_last_lr() == theirs.get_last_lr()
        assert ours_opt.param_groups[0]["betas"] == theirs_opt.param_groups[0]["betas"]


@needs_torch
def test_warm_restarts_with_fractional_epochs_match_torch():
    ours_opt, theirs_opt = _optimizers()
    ours = eoptim.lr_scheduler.CosineAnnealingWarmRestarts(ours_opt, T_0=2, T_mult=3)
    theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(theirs_opt, T_0=2, T_mult=3)
    for epoch in [0.25, 0.5, 1.75, 2.0, 3.5, 7.9, 8.0, 9.3, 30.0]:
        ours.step(epoch)
        theirs.step(epoch)
        assert ours.get_last_lr() == theirs.get_last_lr()


@needs_torch
@pytest.mark.parametrize(
    "build",
    [
        lambda opt, m: m.CosineAnnealingWarmRestarts(opt, T_0=0),
        lambda opt, m: m.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0),
        lambda opt, m: m.CosineAnnealingWarmRestarts(opt, T_0=2, eta_min="x"),
        lambda opt, m: m.CyclicLR(opt, base_lr=0.1, max_lr=1.0, mode="bogus"),
        lambda opt, m: m.CyclicLR(opt, base_lr=[0.1], max_lr=1.0),
        lambda opt, m: m.ChainedScheduler([]),
        lambda opt, m: m.ChainedScheduler([m.ReduceLROnPlateau(opt)]),
    ],
)
def test_scheduler_argument_errors_match_torch(build):
    ours_opt, theirs_opt = _optimizers()
    with pytest.raises(ValueError) as theirs:
        build(theirs_opt, torch.optim.lr_scheduler)
    with pytest.raises(ValueError) as ours:
        build(ours_opt, eoptim.lr_scheduler)
    assert str(ours.value).replace("ember", "torch") == str(theirs.value)


def test_scheduler_names_answer_at_torch_paths():
    from ember.optim.lr_scheduler import ChainedScheduler, CyclicLR, _LRScheduler

    assert CyclicLR.__module__ == ChainedScheduler.__module__ == "ember.optim.lr_scheduler"
    assert issubclass(_LRScheduler, eoptim.lr_scheduler.LRScheduler)


@needs_torch
def test_reduce_on_plateau_matches_torch():
    ours_opt, theirs_opt = _optimizers()
    kwargs = dict(mode="min", factor=0.5, patience=2, cooldown=1, min_lr=[0.01, 0.02])
    ours = eoptim.lr_scheduler.ReduceLROnPlateau(ours_opt, **kwargs)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, **kwargs)
    for metric in [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0]:
        ours.step(metric)
        theirs.step(metric)
        assert ours.get_last_lr() == theirs.get_last_lr()
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())


def test_scheduler_state_dict_resumes():
    opt = eoptim.SGD([Parameter(ember.ones(1))], lr=1.0)
    sched = eoptim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 3
    other = eoptim.lr_scheduler.StepLR(opt, step_size=7)
    other.load_state_dict(state)
    assert other.step_size == 2 and other.get_last_lr() == [0.5]


def test_scheduler_warns_when_stepped_before_the_optimizer():
    opt = eoptim.SGD([Parameter(ember.ones(1))], lr=1.0)
    sched = eoptim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()
