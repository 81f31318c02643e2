"""Adadelta, Adamax, NAdam, RAdam, Rprop and ASGD against PyTorch's: 20 steps on the same parameters
and gradients give the same parameters and state, on the loop and the multi-tensor (foreach) paths;
the state dict has PyTorch's layout, resumes exactly and loads PyTorch's own; errors are PyTorch's."""

from __future__ import annotations

import copy
import importlib

import numpy as np
import pytest
from nn_harness import assert_close, needs_torch, torch, values

import ember
import ember.optim as eoptim
from ember.nn import Parameter

SHAPES = [(3, 4), (5,), (2, 2, 3)]

CASES = [
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.3, weight_decay=0.05, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, weight_decay=0.05, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("NAdam", dict(lr=0.02, betas=(0.85, 0.9), maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.02, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-3, alpha=0.6, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=3, maximize=True)),
    ("ASGD", dict(lr=0.05, t0=3, weight_decay=0.05, maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.02, maximize=True, weight_decay=0.05)),
]

STEPS = 20


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
            assert mine[key].dtype.name == str(ref[key].dtype).removeprefix("torch.")
            assert_close(mine[key], ref[key], rtol=1e-4, atol=1e-5)


def _run(ours_opt, theirs_opt, ours, theirs, rng, steps: int) -> None:
    for _ in range(steps):
        _set_grads(ours, theirs, rng)
        ours_opt.step()
        theirs_opt.step()


@needs_torch
@pytest.mark.parametrize("foreach", [False, True], ids=["loop", "foreach"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name, kwargs, foreach):
    rng = np.random.default_rng(0)
    ours, theirs = _params(rng)
    ours_opt = getattr(eoptim, name)(ours, foreach=foreach, **kwargs)
    theirs_opt = getattr(torch.optim, name)(theirs, foreach=foreach, **kwargs)
    _run(ours_opt, theirs_opt, ours, theirs, rng, STEPS)
    for p, q in zip(ours, theirs, strict=True):
        assert_close(p, q, rtol=1e-5, atol=1e-5)
        assert_close(p.grad, q.grad, rtol=0, atol=0)  # the gradients are never written
    _compare_state(ours_opt, theirs_opt, ours, theirs)
    assert ours_opt.state_dict()["param_groups"] == theirs_opt.state_dict()["param_groups"]


def _to_ember_state(state_dict):
    out = copy.deepcopy(state_dict)
    for entry in out["state"].values():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                entry[key] = ember.tensor(value.numpy().copy())
    return out


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs", [CASES[1], CASES[4], CASES[8], CASES[11], CASES[14], CASES[17], CASES[21]], ids=str
)
def test_state_dict_layout_resume_and_torch_checkpoint(name, kwargs):
    rng = np.random.default_rng(1)
    ours, theirs = _params(rng)
    ours_opt = getattr(eoptim, name)([{"params": ours[:2]}, {"params": ours[2:], "lr": 0.003}], **kwargs)
    theirs_opt = getattr(torch.optim, name)([{"params": theirs[:2]}, {"params": theirs[2:], "lr": 0.003}], **kwargs)
    _run(ours_opt, theirs_opt, ours, theirs, rng, 3)
    mine, ref = ours_opt.state_dict(), theirs_opt.state_dict()
    assert mine["param_groups"] == ref["param_groups"]
    assert list(mine["state"]) == list(ref["state"])
    for index, entry in ref["state"].items():
        assert list(mine["state"][index]) == list(entry)
    # A fresh optimizer loading our state continues exactly as the original; one loading PyTorch's
    # state continues as PyTorch's does.
    copies = [Parameter(ember.tensor(values(p).copy())) for p in ours]
    resumed = getattr(eoptim, name)([{"params": copies[:2]}, {"params": copies[2:]}], **kwargs)
    resumed.load_state_dict(copy.deepcopy(ours_opt.state_dict()))
    assert resumed.param_groups[1]["lr"] == 0.003
    from_torch_params = [Parameter(ember.tensor(q.detach().numpy().copy())) for q in theirs]
    from_torch = getattr(eoptim, name)([{"params": from_torch_params[:2]}, {"params": from_torch_params[2:]}], **kwargs)
    from_torch.load_state_dict(_to_ember_state(theirs_opt.state_dict()))
    for _ in range(3):
        _set_grads(ours, theirs, rng)
        for p, c, f in zip(ours, copies, from_torch_params, strict=True):
            c.grad = p.grad.clone()
            f.grad = p.grad.clone()
        ours_opt.step()
        resumed.step()
        from_torch.step()
        theirs_opt.step()
    for p, c, f, q in zip(ours, copies, from_torch_params, theirs, strict=True):
        np.testing.assert_array_equal(values(p), values(c))
        assert_close(f, q, rtol=1e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("Adadelta", dict(lr=-1.0)),
        ("Adadelta", dict(rho=1.5)),
        ("Adadelta", dict(eps=-1.0)),
        ("Adadelta", dict(weight_decay=-0.1)),
        ("Adamax", dict(betas=(1.0, 0.9))),
        ("Adamax", dict(betas=(0.9, -0.1))),
        ("Adamax", dict(eps=-1e-8)),
        ("NAdam", dict(momentum_decay=-1.0)),
        ("NAdam", dict(weight_decay=-1.0)),
        ("RAdam", dict(lr=-0.1)),
        ("RAdam", dict(betas=(0.9, 1.0))),
        ("Rprop", dict(etas=(1.2, 0.5))),
        ("Rprop", dict(etas=(0.5, 1.0))),
        ("Rprop", dict(lr=-1.0)),
        ("ASGD", dict(weight_decay=-1.0)),
        ("ASGD", dict(lr=-1.0)),
        ("Adafactor", dict(lr=-1.0)),
        ("Adafactor", dict(beta2_decay=0.5)),
        ("Adafactor", dict(eps=(-1.0, 1e-3))),
        ("Adafactor", dict(eps=(None, -1e-3))),
        ("Adafactor", dict(d=0.5)),
        ("Adafactor", dict(weight_decay=-0.5)),
        ("SparseAdam", dict(lr=0.0)),
        ("SparseAdam", dict(eps=0.0)),
        ("SparseAdam", dict(betas=(0.9, 1.0))),
    ],
    ids=str,
)
def test_bad_arguments_raise_torch_errors(name, kwargs):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(eoptim, name)([Parameter(ember.ones(2))], **kwargs)
    assert str(ours.value) == str(theirs.value)


@needs_torch
@pytest.mark.parametrize(
    "name", ["Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor", "SparseAdam", "LBFGS"]
)
def test_defaults_and_repr_match_torch(name):
    ours = getattr(eoptim, name)([Parameter(ember.ones(2))])
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))])
    assert ours.defaults == theirs.defaults
    assert list(ours.defaults) == list(theirs.defaults)
    assert repr(ours) == repr(theirs)


@needs_torch
def test_sparse_adam_refuses_dense_gradients_as_torch_does():
    theirs = torch.nn.Parameter(torch.ones(2))
    theirs.grad = torch.ones(2)
    with pytest.raises(RuntimeError) as expected:
        torch.optim.SparseAdam([theirs]).step()
    ours = Parameter(ember.ones(2))
    ours.grad = ember.ones(2)
    with pytest.raises(RuntimeError) as got:
        eoptim.SparseAdam([ours]).step()
    assert str(got.value) == str(expected.value)
    # Without gradients there is nothing to do, and no error.
    ours.grad = None
    eoptim.SparseAdam([ours]).step()


MUON_CASES = [
    dict(lr=0.02),
    dict(lr=0.02, nesterov=False, adjust_lr_fn="match_rms_adamw", weight_decay=0.0),
    dict(lr=0.05, momentum=0.8, ns_steps=3, adjust_lr_fn="original", weight_decay=0.05),
]


@needs_torch
@pytest.mark.parametrize("kwargs", MUON_CASES, ids=str)
def test_muon_matches_torch(kwargs):
    # The Newton-Schulz iteration runs in bfloat16 on both sides; its roundings may differ by an ulp.
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(4, 6), (7, 3), (5, 5)]]
    ours = [Parameter(ember.tensor(a)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in arrays]
    ours_opt, theirs_opt = eoptim.Muon(ours, **kwargs), torch.optim.Muon(theirs, **kwargs)
    _run(ours_opt, theirs_opt, ours, theirs, rng, STEPS)
    for p, q in zip(ours, theirs, strict=True):
        assert_close(p, q, rtol=1e-3, atol=1e-3)
    _compare_state(ours_opt, theirs_opt, ours, theirs)
    assert ours_opt.state_dict()["param_groups"] == theirs_opt.state_dict()["param_groups"]


@needs_torch
@pytest.mark.parametrize(
    "kwargs", [dict(lr=-1.0), dict(momentum=-0.5), dict(weight_decay=-1.0), dict(adjust_lr_fn="other")], ids=str
)
def test_muon_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.Muon([torch.nn.Parameter(torch.ones(2, 2))], **kwargs)
    with pytest.raises(ValueError) as ours:
        eoptim.Muon([Parameter(ember.ones(2, 2))], **kwargs)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        eoptim.Muon([Parameter(ember.ones(3))])


def _hook_trace(module, make_param):
    """The order in which the state-dict and global step hooks run, and what they can change."""
    calls = []
    param = make_param()
    opt = module.SGD([param], lr=0.1)
    opt.register_state_dict_pre_hook(lambda o: calls.append("sd-pre"))
    opt.register_state_dict_pre_hook(lambda o: calls.append("sd-pre-first"), prepend=True)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append(("load-pre", sorted(sd))))
    handle = opt.register_load_state_dict_post_hook(lambda o: calls.append("load-post"))
    saved = opt.state_dict()
    calls.append(sorted(saved))
    opt.load_state_dict(saved)
    handle.remove()
    opt.load_state_dict(saved)
    optimizer_module = importlib.import_module(module.__name__ + ".optimizer")
    global_pre = optimizer_module.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("global-pre"))
    global_post = optimizer_module.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global-post"))
    opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", len(a), a[0] is o)))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", len(a))))
    # A pre-hook may replace the arguments: here it supplies a closure, whose loss the step returns.
    opt.register_step_pre_hook(lambda o, a, k: ((a[0], lambda: 5.0), k))
    try:
        calls.append(opt.step())
    finally:
        global_pre.remove()
        global_post.remove()
    opt.step()
    return calls


@needs_torch
def test_state_dict_and_global_step_hooks_run_as_torch_runs_them():
    ours = _hook_trace(eoptim, lambda: Parameter(ember.ones(2)))
    theirs = _hook_trace(torch.optim, lambda: torch.nn.Parameter(torch.ones(2)))
    assert ours == theirs


def _swap_in_run(module, tensor, parameter):
    """Step an Adam on swapped-in copies; return the swapped tensors, the live ones and the saved state."""
    live = [parameter(tensor([1.0, 2.0])), parameter(tensor([3.0]))]
    opt = module.optim.Adam([{"params": live[:1]}, {"params": live[1:], "lr": 0.5}], lr=0.1)
    for p in live:
        p.grad = tensor([0.5] * p.numel())
    opt.step()
    saved = copy.deepcopy(opt.state_dict())
    saved["param_groups"][0]["lr"] = 0.01
    others = {"a": parameter(tensor([10.0, 20.0])), "b": parameter(tensor([30.0]))}
    for p in others.values():
        p.grad = tensor([1.0] * p.numel())
    original_params = opt.param_groups[0]["params"]
    with module.optim.swap_in_optimizer_params_and_state(opt, others, saved):
        assert opt.param_groups[0]["params"][0] is others["a"]
        opt.step()
    assert opt.param_groups[0]["params"] is original_params and opt.param_groups[0]["lr"] == 0.1
    assert set(map(id, opt.state)) == set(map(id, live))
    return (
        [p.detach().numpy().tolist() for p in others.values()],
        [p.detach().numpy().tolist() for p in live],
        saved["state"][0]["exp_avg"].numpy().tolist(),
        float(saved["state"][0]["step"]),
    )


@needs_torch
def test_swap_in_optimizer_params_and_state_matches_torch():
    ours = _swap_in_run(ember, ember.tensor, Parameter)
    theirs = _swap_in_run(torch, torch.tensor, torch.nn.Parameter)
    np.testing.assert_allclose(np.concatenate(ours[0]), np.concatenate(theirs[0]), rtol=1e-6)
    assert ours[1:] == theirs[1:]


@needs_torch
def test_swap_in_errors_match_torch():
    def attempt(module, tensor, parameter, mutate):
        p = parameter(tensor([1.0]))
        opt = module.optim.SGD([p], lr=0.1, momentum=0.9)
        p.grad = tensor([1.0])
        opt.step()
        saved = opt.state_dict()
        with (
            pytest.raises(RuntimeError) as info,
            module.optim.swap_in_optimizer_params_and_state(opt, {"p": parameter(tensor([2.0]))}, mutate(saved)),
        ):
            pass
        return str(info.value)

    mutations = [
        lambda sd: {**sd, "state": {**sd["state"], 7: {}}},
        lambda sd: {**sd, "param_groups": []},
        lambda sd: {**sd, "param_groups": [{**sd["param_groups"][0], "extra": 1}]},
        lambda sd: {**sd, "state": [1]},
    ]
    for mutate in mutations:
        assert attempt(ember, ember.tensor, Parameter, mutate) == attempt(
            torch, torch.tensor, torch.nn.Parameter, mutate
        )


ALL_OPTIMIZERS = [
    "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "LBFGS", "Muon", "NAdam", "RAdam",
    "RMSprop", "Rprop", "SGD", "SparseAdam",
]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("name", ALL_OPTIMIZERS)
def test_tensor_learning_rates_as_torch(name):
    shape = (2, 2) if name == "Muon" else (2,)
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(shape))], lr=torch.tensor([0.1, 0.2]))
    with pytest.raises(ValueError) as ours:
        getattr(eoptim, name)([Parameter(ember.ones(shape))], lr=ember.tensor([0.1, 0.2]))
    assert str(ours.value) == str(theirs.value)


@needs_torch
@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor"])
def test_one_element_tensor_learning_rate_steps_as_a_float(name):
    rng = np.random.default_rng(4)
    ours, theirs = _params(rng)
    ours_opt = getattr(eoptim, name)(ours, lr=ember.tensor(0.01))
    theirs_opt = getattr(torch.optim, name)(theirs, lr=torch.tensor(0.01))
    _run(ours_opt, theirs_opt, ours, theirs, rng, 5)
    for p, q in zip(ours, theirs, strict=True):
        assert_close(p, q, rtol=1e-5, atol=1e-6)
