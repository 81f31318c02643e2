"""``Module`` against ``torch.nn.Module``: registration, iteration order, state dicts and their key
reporting, conversion that keeps parameter objects, modes, hooks, containers and printing."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from nn_harness import copy_weights, needs_torch, torch, torch_repr, values

import ember
import ember.nn as enn


def _model(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.norm = nn.LayerNorm(4)
            self.register_buffer("scale", (nn.Parameter if False else _ones(nn))(4))
            self.register_buffer("cache", _ones(nn)(2), persistent=False)

        def forward(self, x):
            return self.norm(self.fc(x)) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.blocks = nn.ModuleList([Block(), Block(), nn.Identity()])
            self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Sequential(nn.ReLU(), nn.Linear(4, 3))})
            self.extra = nn.ParameterList([nn.Parameter(_ones(nn)(3))])
            self.tied = self.heads["a"]

    return Net()


def _ones(nn):
    return (torch if nn is torch.nn else ember).ones


@needs_torch
def test_names_order_and_printing_match_torch():
    torch.manual_seed(0)
    theirs, ours = _model(torch.nn), _model(enn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.state_dict()._metadata == theirs.state_dict()._metadata
    assert torch_repr(repr(ours)) == repr(theirs)
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))  # the tied head counts once
    assert [n for n, _ in ours.named_parameters(remove_duplicate=False)] == [
        n for n, _ in theirs.named_parameters(remove_duplicate=False)
    ]


@needs_torch
def test_load_state_dict_reports_keys_as_torch_does():
    theirs, ours = torch.nn.Linear(3, 2), enn.Linear(3, 2)
    copy_weights(theirs, ours)
    np.testing.assert_array_equal(values(ours.weight), theirs.weight.detach().numpy())
    bad = {"weight": ember.ones(2, 3), "extra.x": ember.ones(1), "bias2": ember.ones(2)}
    t_bad = {k: torch.ones(tuple(v.shape)) for k, v in bad.items()}
    with pytest.raises(RuntimeError) as ours_err:
        ours.load_state_dict(bad)
    with pytest.raises(RuntimeError) as theirs_err:
        theirs.load_state_dict(t_bad)
    assert str(ours_err.value) == str(theirs_err.value)
    result = ours.load_state_dict(bad, strict=False)
    assert result == theirs.load_state_dict(t_bad, strict=False)
    assert repr(ours.load_state_dict({"weight": ember.ones(2, 3), "bias": ember.ones(2)})) == (
        "<All keys matched successfully>"
    )
    with pytest.raises(RuntimeError) as ours_err:
        ours.load_state_dict({"weight": ember.ones(3, 3), "bias": ember.ones(2)})
    with pytest.raises(RuntimeError) as theirs_err:
        theirs.load_state_dict({"weight": torch.ones(3, 3), "bias": torch.ones(2)})
    assert torch_repr(str(ours_err.value)) == str(theirs_err.value)


def test_conversion_keeps_parameter_objects_and_ties():
    model = enn.Sequential(enn.Linear(3, 3), enn.BatchNorm1d(3))
    model[0].weight.grad = ember.ones(3, 3)
    weight = model[0].weight
    optimizer_view = list(model.parameters())
    model.double()
    assert model[0].weight is weight and weight.dtype is ember.float64 and weight.grad.dtype is ember.float64
    assert model[1].num_batches_tracked.dtype is ember.int64  # integer buffers keep their dtype
    assert all(p is q for p, q in zip(model.parameters(), optimizer_view, strict=True))
    model.to(ember.float32).half()
    assert weight.dtype is ember.float16 and model[1].running_mean.dtype is ember.float16
    model.float()
    with pytest.raises(TypeError, match=r"nn\.Module\.to only accepts floating point or complex dtypes"):
        model.to(ember.int32)
    shared = enn.Linear(2, 2)
    pair = enn.Sequential(shared, shared)
    assert len(list(pair.parameters())) == 2 and list(pair.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_registration_errors_and_attribute_protocol():
    m = enn.Module()
    with pytest.raises(KeyError, match="buffer name can"):
        m.register_buffer("a.b", ember.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' object to buffer 'b' \(torch Tensor or None required\)"):
        m.register_buffer("b", 3)
    m.w = enn.Parameter(ember.ones(2))
    with pytest.raises(
        TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter 'w' \(torch.nn.Parameter or None expected\)"
    ):
        m.w = ember.ones(2)
    m.w = None
    assert m.w is None and "w" in m._parameters
    m.b = enn.Buffer(ember.zeros(2), persistent=False)
    assert "b" in m._buffers and "b" in m._non_persistent_buffers_set and list(m.state_dict()) == []
    del m.b
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'b'"):
        m.b  # noqa: B018
    with pytest.raises(AttributeError, match=r"cannot assign module before Module\.__init__"):

        class Early(enn.Module):
            def __init__(self):
                self.child = enn.ReLU()

        Early()


def test_modes_grads_apply_and_hooks():
    model = enn.Sequential(enn.Linear(2, 2), enn.Dropout(0.5))
    assert model.training and model[1].training
    model.eval()
    assert not model.training and not model[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    model.requires_grad_(True)
    for p in model.parameters():
        p.grad = ember.ones_like(p)
    model.zero_grad(set_to_none=False)
    assert all((p.grad.numpy() == 0).all() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Dropout", "Sequential"]

    calls = []
    relu = enn.ReLU()
    pre = relu.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    relu.register_forward_hook(lambda m, args, out: out + 1)
    relu.register_forward_hook(lambda m, args, kwargs, out: calls.append(sorted(kwargs)), with_kwargs=True)
    relu.register_forward_pre_hook(lambda m, args: calls.append("first"), prepend=True)
    np.testing.assert_array_equal(relu(ember.tensor([-1.0, 2.0])).numpy(), [1.0, 5.0])
    assert calls == ["first", []]
    pre.remove()
    np.testing.assert_array_equal(relu(ember.tensor([-1.0, 2.0])).numpy(), [1.0, 3.0])


@needs_torch
def test_containers_behave_as_torch():
    layers = [enn.Linear(2, 2) for _ in range(3)] + [enn.ReLU()]
    t_layers = [torch.nn.Linear(2, 2) for _ in range(3)] + [torch.nn.ReLU()]
    assert torch_repr(repr(enn.ModuleList(layers))) == repr(torch.nn.ModuleList(t_layers))
    seq = enn.Sequential(OrderedDict(a=enn.ReLU(), b=enn.Tanh(), c=enn.Sigmoid()))
    assert torch_repr(repr(seq[1:])) == repr(
        torch.nn.Sequential(OrderedDict(a=torch.nn.ReLU(), b=torch.nn.Tanh(), c=torch.nn.Sigmoid()))[1:]
    )
    seq2 = enn.Sequential(enn.ReLU(), enn.Tanh(), enn.Sigmoid())
    del seq2[0]
    assert list(seq2._modules) == ["0", "1"] and isinstance(seq2[0], enn.Tanh)
    plist = enn.ParameterList([ember.ones(2, 3), enn.Parameter(ember.zeros(4))])
    t_plist = torch.nn.ParameterList([torch.ones(2, 3), torch.nn.Parameter(torch.zeros(4))])
    assert isinstance(plist[0], enn.Parameter)
    assert torch_repr(repr(plist)) == repr(t_plist)
    pdict = enn.ParameterDict({"b": ember.ones(1), "a": ember.ones(2)})
    t_pdict = torch.nn.ParameterDict({"b": torch.ones(1), "a": torch.ones(2)})
    assert list(pdict) == list(t_pdict) and torch_repr(repr(pdict)) == repr(t_pdict)
    assert [n for n, _ in pdict.named_parameters()] == [n for n, _ in t_pdict.named_parameters()]
    mdict = enn.ModuleDict([("x", enn.ReLU()), ("y", enn.Tanh())])
    assert list(mdict.keys()) == ["x", "y"] and "x" in mdict and len(mdict) == 2


@needs_torch
def test_parameter_repr_and_identity():
    p = enn.Parameter(ember.tensor([1.0, 2.0]))
    assert p.requires_grad and isinstance(p, ember.Tensor)
    assert torch_repr(repr(p)) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))
    assert not enn.Parameter(ember.ones(1), requires_grad=False).requires_grad
    assert type(p * 2) is ember.Tensor


@needs_torch
def test_train_a_small_model_with_sgd_in_eval_free_parts():
    # A full step without recording: forward, a hand-written gradient of MSE for a linear layer, optimizer step.
    torch.manual_seed(0)
    theirs, ours = torch.nn.Linear(3, 1), enn.Linear(3, 1)
    copy_weights(theirs, ours)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((8, 1)).astype(np.float32)
    loss = torch.nn.functional.mse_loss(theirs(torch.from_numpy(x)), torch.from_numpy(y))
    loss.backward()
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        p.grad = ember.tensor(q.grad.numpy().copy())
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1)
    opt_e = ember.optim.SGD(ours.parameters(), lr=0.1)
    opt_t.step()
    opt_e.step()
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(values(p), q.detach().numpy(), rtol=1e-6)


def test_copies_pickles_and_meta():
    import copy
    import pickle

    model = enn.Sequential(enn.Linear(2, 3), enn.BatchNorm1d(3))
    clone = copy.deepcopy(model)
    assert isinstance(clone[0].weight, enn.Parameter) and clone[0].weight is not model[0].weight
    np.testing.assert_array_equal(values(clone[0].weight), values(model[0].weight))
    restored = pickle.loads(pickle.dumps(model))
    assert restored[0].weight.requires_grad and restored[1].num_batches_tracked.dtype is ember.int64
    meta = enn.Linear(2, 3).to("meta")
    assert meta.weight.device.type == "meta" and isinstance(meta.weight, enn.Parameter)


@needs_torch
def test_embedding_max_norm_renormalizes_the_rows_it_reads():
    torch.manual_seed(0)
    theirs, ours = torch.nn.Embedding(6, 3, max_norm=1.0), enn.Embedding(6, 3, max_norm=1.0)
    copy_weights(theirs, ours)
    assert torch_repr(repr(ours)) == repr(theirs)
    idx = np.array([[0, 2], [2, 5]])
    with torch.no_grad():
        expected = theirs(torch.from_numpy(idx))
    with ember.no_grad():
        got = ours(ember.tensor(idx))
    np.testing.assert_allclose(values(got), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(values(ours.weight), theirs.weight.detach().numpy(), rtol=1e-6)


@needs_torch
def test_extra_state_round_trips_as_in_torch():
    def make(nn):
        class Counter(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(1, 1)
                self.count = 0

            def get_extra_state(self):
                return {"count": self.count}

            def set_extra_state(self, state):
                self.count = state["count"]

        return nn.Sequential(Counter())

    ours, theirs = make(enn), make(torch.nn)
    ours[0].count = 5
    assert list(ours.state_dict()) == list(theirs.state_dict())
    fresh = make(enn)
    fresh.load_state_dict(ours.state_dict())
    assert fresh[0].count == 5
    partial = {k: v for k, v in ours.state_dict().items() if not k.endswith("_extra_state")}
    assert fresh.load_state_dict(partial, strict=False).missing_keys == ["0._extra_state"]
    plain = enn.Linear(1, 1)
    result = plain.load_state_dict({**plain.state_dict(), "_extra_state": 1}, strict=False)
    assert result.unexpected_keys == ["_extra_state"]


def test_forward_hooks_with_kwargs_and_always_call():
    class Scale(enn.Module):
        def forward(self, x, *, factor=1.0):
            if factor < 0:
                raise ValueError("negative factor")
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {**kwargs, "factor": 3.0}), with_kwargs=True)
    np.testing.assert_array_equal(m(ember.ones(2)).numpy(), [3.0, 3.0])
    seen = []
    m2 = Scale()
    m2.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="negative factor"):
        m2(ember.ones(1), factor=-1.0)
    assert seen == [None]
