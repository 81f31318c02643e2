"""Optimizers against PyTorch's: the same parameters and gradients give the same parameters and
state after several steps, on the per-tensor path and on the multi-tensor (foreach) path; the state
dict has PyTorch's layout and resumes exactly; the hooks and the errors are PyTorch's."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from nn_harness import assert_close, needs_torch, torch, values

import ember
import ember.optim as eoptim
from ember.nn import Parameter

SHAPES = [(3, 4), (5,), (2, 2, 3)]

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, weight_decay=0.05)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, amsgrad=True, maximize=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True, momentum=0.5)),
]


def _params(rng):
    arrays = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours = [Parameter(ember.tensor(a)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in arrays]
    return ours, theirs


def _set_grads(ours, theirs, rng) -> None:
    for p, q in zip(ours, theirs, strict=True):
        g = rng.standard_normal(tuple(q.shape)).astype(np.float32)
        p.grad = ember.tensor(g)
        q.grad = torch.from_numpy(g.copy())


def _compare_state(ours_opt, theirs_opt, ours, theirs) -> None:
    for p, q in zip(ours, theirs, strict=True):
        mine, ref = ours_opt.state[p], theirs_opt.state[q]
        assert list(mine) == list(ref)
        for key in ref:
            if isinstance(ref[key], torch.Tensor):
                assert mine[key].dtype.name == str(ref[key].dtype).removeprefix("torch.")
                assert_close(mine[key], ref[key], rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("foreach", [False, True], ids=["loop", "foreach"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name, kwargs, foreach):
    rng = np.random.default_rng(0)
    ours, theirs = _params(rng)
    ours_opt = getattr(eoptim, name)(ours, foreach=foreach, **kwargs)
    theirs_opt = getattr(torch.optim, name)(theirs, foreach=foreach, **kwargs)
    for _ in range(4):
        _set_grads(ours, theirs, rng)
        ours_opt.step()
        theirs_opt.step()
    for p, q in zip(ours, theirs, strict=True):
        assert_close(p, q, rtol=1e-6, atol=1e-6)
        assert_close(p.grad, q.grad, rtol=0, atol=0)  # the multi-tensor SGD writes into grads, as PyTorch's does
    _compare_state(ours_opt, theirs_opt, ours, theirs)


@needs_torch
@pytest.mark.parametrize("name,kwargs", [CASES[1], CASES[5], CASES[9], CASES[12]], ids=lambda v: str(v))
def test_state_dict_layout_and_resume(name, kwargs):
    rng = np.random.default_rng(1)
    ours, theirs = _params(rng)
    groups = [{"params": ours[:2]}, {"params": ours[2:], "lr": 0.003}]
    ours_opt = getattr(eoptim, name)(groups, **kwargs)
    theirs_opt = getattr(torch.optim, name)([{"params": theirs[:2]}, {"params": theirs[2:], "lr": 0.003}], **kwargs)
    for _ in range(2):
        _set_grads(ours, theirs, rng)
        ours_opt.step()
        theirs_opt.step()
    mine, ref = ours_opt.state_dict(), theirs_opt.state_dict()
    assert mine["param_groups"] == ref["param_groups"]
    assert list(mine["state"]) == list(ref["state"])
    for index, entry in ref["state"].items():
        assert list(mine["state"][index]) == list(entry)
    # A fresh optimizer loading the saved state continues exactly as the original would.
    copies = [Parameter(ember.tensor(values(p).copy())) for p in ours]
    resumed = getattr(eoptim, name)([{"params": copies[:2]}, {"params": copies[2:]}], **kwargs)
    # Through a deep copy, as through a checkpoint file: a loaded state dict's tensors are used as they are.
    resumed.load_state_dict(copy.deepcopy(ours_opt.state_dict()))
    assert resumed.param_groups[1]["lr"] == 0.003
    _set_grads(ours, theirs, rng)
    for p, c in zip(ours, copies, strict=True):
        c.grad = p.grad.clone()
    ours_opt.step()
    resumed.step()
    for p, c in zip(ours, copies, strict=True):
        np.testing.assert_array_equal(values(p), values(c))


def test_param_group_errors_and_repr():
    p = Parameter(ember.ones(2))
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        eoptim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        eoptim.Adam([])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        eoptim.Adam([p], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        eoptim.SGD([p], nesterov=True)
    opt = eoptim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(NotImplementedError, match="fused=True"):
        eoptim.Adam([p], fused=True)
    if torch is not None:
        assert repr(opt) == repr(torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1))


def test_zero_grad_and_step_hooks():
    p = Parameter(ember.ones(3))
    opt = eoptim.SGD([p], lr=0.5)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    p.grad = ember.ones(3)
    opt.step()
    assert calls == ["pre", "post"]
    np.testing.assert_allclose(values(p), 0.5)
    pre.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]
    opt.zero_grad(set_to_none=False)
    assert (p.grad.numpy() == 0).all()
    opt.zero_grad()
    assert p.grad is None
    # A closure runs with gradients recorded, and its result is returned.
    assert opt.step(lambda: 7.0) == 7.0


@needs_torch
@pytest.mark.parametrize("name", ["SGD", "Adam", "Adagrad", "RMSprop"])
def test_parameters_without_gradients_are_left_alone(name):
    rng = np.random.default_rng(5)
    ours, theirs = _params(rng)
    kwargs = {"lr": 0.1, "momentum": 0.5} if name in ("SGD", "RMSprop") else {"lr": 0.1}
    ours_opt, theirs_opt = getattr(eoptim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    _set_grads(ours, theirs, rng)
    ours[1].grad = None
    theirs[1].grad = None
    before = values(ours[1]).copy()
    ours_opt.step()
    theirs_opt.step()
    np.testing.assert_array_equal(values(ours[1]), before)
    assert list(ours_opt.state_dict()["state"]) == list(theirs_opt.state_dict()["state"])
    for p, q in zip(ours, theirs, strict=True):
        assert_close(p, q, rtol=1e-6, atol=1e-6)


@needs_torch
def test_named_parameters_and_state_cast_to_the_parameter_dtype():
    model = ember.nn.Linear(2, 2)
    opt = eoptim.Adam(model.named_parameters(), lr=0.1)
    t_model = torch.nn.Linear(2, 2)
    t_opt = torch.optim.Adam(t_model.named_parameters(), lr=0.1)
    assert opt.state_dict()["param_groups"] == t_opt.state_dict()["param_groups"]
    for p in model.parameters():
        p.grad = ember.ones_like(p)
    opt.step()
    saved = copy.deepcopy(opt.state_dict())
    model.double()
    opt.load_state_dict(saved)
    state = opt.state[model.weight]
    assert state["exp_avg"].dtype is ember.float64 and state["step"].dtype is ember.float32
