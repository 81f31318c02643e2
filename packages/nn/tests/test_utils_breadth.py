"""``nn.init``'s remaining names and ``nn.utils``: parametrizations, the hook-based norms, fusion,
``stateless``, ``skip_init``, gradient clipping and pruning, against PyTorch."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
pytest.importorskip("torch.nn.utils.prune")  # a submodule PyTorch does not import by itself
from breadth_oracle import check_layer  # noqa: E402

import ember  # noqa: E402


def _x(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def _parametrized(kind: str, **kwargs):
    def build(nn):
        layer = nn.Linear(4, 3) if kind != "conv" else nn.ConvTranspose2d(3, 2, 2)
        return getattr(nn.utils.parametrizations, kwargs.pop("fn", "weight_norm"))(layer, **kwargs)

    return build


NORMED = [
    ("weight_norm", lambda nn: nn.utils.parametrizations.weight_norm(nn.Linear(4, 3)), _x(5, 4)),
    ("weight_norm-dim1", lambda nn: nn.utils.parametrizations.weight_norm(nn.Linear(4, 3), dim=1), _x(5, 4)),
    ("weight_norm-dimNone", lambda nn: nn.utils.parametrizations.weight_norm(nn.Conv2d(2, 3, 2), dim=None),
     _x(1, 2, 4, 4)),
    ("spectral_norm", lambda nn: nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3)), _x(5, 4)),
    ("spectral_norm-convT", lambda nn: nn.utils.parametrizations.spectral_norm(nn.ConvTranspose2d(3, 2, 2), n_power_iterations=3),
     _x(1, 3, 3, 3)),
]  # fmt: skip


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("name,build,inputs", NORMED, ids=[n[0] for n in NORMED])
def test_parametrizations_match_torch(name, build, inputs, training):
    check_layer(build, inputs, "float64", training=training)


def test_parametrized_module_layout_state_dict_and_removal_match_torch():
    torch.manual_seed(0)
    theirs = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3))
    ours = ember.nn.utils.parametrizations.weight_norm(ember.nn.Linear(4, 3))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    ours.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    P, TP = ember.nn.utils.parametrize, torch.nn.utils.parametrize
    assert P.is_parametrized(ours, "weight") and not P.is_parametrized(ours, "bias")
    assert P.type_before_parametrizations(ours) is ember.nn.Linear
    with torch.no_grad():
        theirs.weight = theirs.weight * 2
    with ember.no_grad():
        ours.weight = ours.weight * 2
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-6, err_msg=key)
    replica = copy.deepcopy(ours)
    assert (
        type(replica) is type(ours)
        and replica.parametrizations.weight.original0 is not ours.parametrizations.weight.original0
    )
    np.testing.assert_allclose(replica.weight.detach().numpy(), ours.weight.detach().numpy())
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(ours)
    TP.remove_parametrizations(theirs, "weight")
    P.remove_parametrizations(ours, "weight")
    assert type(ours) is ember.nn.Linear and list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-6)


def test_custom_parametrization_chain_and_cache():
    class Symmetric(ember.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

    class Scale(ember.nn.Module):
        def forward(self, x):
            return x * 3

        def right_inverse(self, x):
            return x / 3

    layer = ember.nn.Linear(3, 3)
    P = ember.nn.utils.parametrize
    P.register_parametrization(layer, "weight", Symmetric())
    P.register_parametrization(layer, "weight", Scale())
    w = layer.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    with P.cached():
        assert layer.weight is layer.weight
    assert list(dict(layer.named_parameters())) == ["bias", "parametrizations.weight.original"]
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        P.register_parametrization(layer, "nothing", Scale())


ORTHOGONAL = [((4, 4), {}), ((5, 3), {}), ((3, 5), {}), ((4, 4), {"orthogonal_map": "householder"}),
              ((5, 3), {"orthogonal_map": "matrix_exp"})]  # fmt: skip


@pytest.mark.parametrize("shape,kwargs", ORTHOGONAL, ids=[f"{s[0]}x{s[1]}-{k}" for s, k in ORTHOGONAL])
def test_orthogonal_matches_torch(shape, kwargs):
    def build(nn):
        layer = nn.Linear(shape[1], shape[0], bias=False)
        return nn.utils.parametrizations.orthogonal(layer, **kwargs)

    torch.manual_seed(0)
    theirs = build(torch.nn).double()
    with torch.no_grad():  # away from the identity, so the map's gradient is not trivial
        theirs.parametrizations.weight.original.add_(torch.randn(shape, dtype=torch.float64) * 0.3)
    ours = build(ember.nn).double()
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in state.items()})
    x = np.random.default_rng(0).standard_normal((2, shape[1]))
    t_out, e_out = theirs(torch.tensor(x)), ours(ember.tensor(x))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    t_out.sum().backward()
    e_out.sum().backward()
    np.testing.assert_allclose(
        ours.parametrizations.weight.original.grad.numpy(), theirs.parametrizations.weight.original.grad.numpy(),
        rtol=1e-10, atol=1e-12,
    )  # fmt: skip


def test_orthogonal_assignment_orthogonalizes_like_torch():
    q = np.random.default_rng(0).standard_normal((4, 4))
    weights = []
    for lib in (torch, ember):
        layer = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(4, 4, bias=False).double())
        with lib.no_grad():
            layer.weight = lib.tensor(q)
        weights.append(layer.weight.detach().numpy())
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights[1].T @ weights[1], np.eye(4), atol=1e-12)
    cayley = ember.nn.utils.parametrizations.orthogonal(ember.nn.Linear(3, 3), orthogonal_map="cayley")
    with pytest.raises(NotImplementedError, match=r"linalg\.solve"):
        cayley.weight  # noqa: B018


OLD_STYLE = [
    ("weight_norm", lambda nn: nn.utils.weight_norm(nn.Linear(4, 3)), _x(5, 4)),
    ("spectral_norm", lambda nn: nn.utils.spectral_norm(nn.Linear(4, 3), n_power_iterations=2), _x(5, 4)),
]


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("name,build,inputs", OLD_STYLE, ids=[n[0] for n in OLD_STYLE])
def test_hook_based_norms_match_torch(name, build, inputs, training):
    check_layer(build, inputs, "float64", training=training)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_hook_based_norms_remove_like_torch():
    results = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        layer = lib.nn.utils.weight_norm(lib.nn.Linear(4, 3), dim=None)
        lib.nn.utils.remove_weight_norm(layer)
        spectral = lib.nn.utils.spectral_norm(lib.nn.Linear(4, 3))
        names = sorted(dict(spectral.state_dict()))
        lib.nn.utils.remove_spectral_norm(spectral)
        results.append((sorted(dict(layer.state_dict())), names, sorted(dict(spectral.state_dict()))))
        with pytest.raises(ValueError, match=r"weight_norm of 'weight' not found in"):
            lib.nn.utils.remove_weight_norm(layer)
    assert results[0] == results[1]


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_torch(transpose):
    def build(nn):
        conv = nn.ConvTranspose2d(3, 4, 2) if transpose else nn.Conv2d(3, 4, 2)
        bn = nn.BatchNorm2d(4)
        with (torch if nn is torch.nn else ember).no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 2)
        return nn.Sequential(conv, bn).eval()

    torch.manual_seed(0)
    theirs = build(torch.nn).double()
    ours = build(ember.nn).double()
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    fused_t = torch.nn.utils.fuse_conv_bn_eval(theirs[0], theirs[1], transpose=transpose)
    fused_e = ember.nn.utils.fuse_conv_bn_eval(ours[0], ours[1], transpose=transpose)
    for key, value in fused_t.state_dict().items():
        np.testing.assert_allclose(fused_e.state_dict()[key].detach().numpy(), value.numpy(), rtol=1e-12)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4))
    with ember.no_grad():
        np.testing.assert_allclose(fused_e(ember.tensor(x)).numpy(), ours(ember.tensor(x)).numpy(), rtol=1e-10)


def test_fuse_linear_bn_eval_matches_torch():
    torch.manual_seed(0)
    linear, bn = torch.nn.Linear(3, 4).eval(), torch.nn.BatchNorm1d(4).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    ours_linear, ours_bn = ember.nn.Linear(3, 4).eval(), ember.nn.BatchNorm1d(4).eval()
    ours_linear.load_state_dict({k: ember.tensor(v.numpy()) for k, v in linear.state_dict().items()})
    ours_bn.load_state_dict({k: ember.tensor(v.numpy()) for k, v in bn.state_dict().items()})
    theirs = torch.nn.utils.fuse_linear_bn_eval(linear, bn)
    ours = ember.nn.utils.fuse_linear_bn_eval(ours_linear, ours_bn)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].detach().numpy(), value.numpy(), rtol=1e-6)


def test_stateless_functional_call_warns_and_calls():
    layer = ember.nn.Linear(2, 1)
    params = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        out = ember.nn.utils.stateless.functional_call(layer, params, (ember.tensor([[1.0, 2.0]]),))
    assert out.item() == 3.0


def test_skip_init_and_clipping_helpers():
    layer = ember.nn.utils.skip_init(ember.nn.Linear, 3, 2)
    assert tuple(layer.weight.shape) == (2, 3) and layer.weight.device.type == "cpu"
    grads = []
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.tensor([3.0, 4.0]))
        p.grad = lib.tensor([3.0, 4.0])
        total = lib.nn.utils.get_total_norm([p.grad])
        lib.nn.utils.clip_grads_with_norm_([p], 1.0, total)
        with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
            lib.nn.utils.clip_grad_norm([p], 0.5)
        grads.append(p.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_deprecated_init_names_warn_and_fill():
    t = ember.empty(4, 5)
    for old in ("uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
                "orthogonal", "eye"):  # fmt: skip
        with pytest.warns(FutureWarning, match=f"`nn.init.{old}` is now deprecated in favor of `nn.init.{old}_`"):
            getattr(ember.nn.init, old)(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.nn.init.constant(t, 2.5)
        assert (t.numpy() == 2.5).all()
    ember.nn.init.sparse_(t, 0.5, std=0.1)
    assert ((t.numpy() == 0).sum(0) == 2).all()
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        ember.nn.init.sparse_(ember.empty(2, 2, 2), 0.5)


def test_pruning_matches_torch():
    results = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        prune = lib.nn.utils.prune
        conv = lib.nn.Conv2d(2, 4, 2)
        with lib.no_grad():
            conv.weight.copy_(lib.tensor(np.random.default_rng(0).permutation(32).reshape(4, 2, 2, 2) - 15.5))
            conv.bias.copy_(lib.tensor([0.1, -0.2, 0.3, 0.4]))
        prune.l1_unstructured(conv, "weight", amount=0.25)
        prune.ln_structured(conv, "weight", amount=1, n=2, dim=0)
        prune.l1_unstructured(conv, "weight", amount=3)
        keys = sorted(dict(conv.state_dict()))
        pruned = lib.nn.utils.prune.is_pruned(conv)
        x = lib.ones(1, 2, 3, 3)
        out = conv(x)
        mask = conv.weight_mask.clone()
        prune.remove(conv, "weight")
        linear_a, linear_b = lib.nn.Linear(3, 2), lib.nn.Linear(2, 2)
        with lib.no_grad():
            linear_a.weight.copy_(lib.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]))
            linear_b.weight.copy_(lib.tensor([[0.5, 7.0], [-0.1, 2.5]]))
            linear_a.bias.copy_(lib.tensor([0.25, -0.75]))
        prune.global_unstructured([(linear_a, "weight"), (linear_b, "weight")], prune.L1Unstructured, amount=4)
        prune.custom_from_mask(linear_a, "bias", lib.tensor([1.0, 0.0]))
        results.append((keys, pruned, out.detach().numpy(), mask.numpy(), conv.weight.detach().numpy(),
                        linear_a.weight_mask.numpy(), linear_b.weight_mask.numpy(), linear_a.bias.detach().numpy()))  # fmt: skip
    ours, theirs = results[1], results[0]
    assert ours[:2] == theirs[:2]
    for a, b in zip(ours[2:], theirs[2:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_random_pruning_prunes_the_amount():
    prune = ember.nn.utils.prune
    layer = ember.nn.Linear(10, 6)
    prune.random_unstructured(layer, "weight", amount=0.3)
    assert int((layer.weight_mask.numpy() == 0).sum()) == 18
    prune.random_structured(layer, "bias", amount=2, dim=0)
    assert int((layer.bias_mask.numpy() == 0).sum()) == 2
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(ember.nn.Linear(2, 2), "weight", amount=1.5)
