"""``nn.Embedding(sparse=True)``/``EmbeddingBag(sparse=True)`` and the optimizers that take sparse
gradients against PyTorch: the sparse weight gradient (one entry per lookup, padding rows left out;
``scale_grad_by_freq`` refused), and training from the same weights giving the same parameters
(SparseAdam over 20 steps; SGD and Adagrad)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled:UserWarning")

ROWS, DIM = 10, 4


def embeddings(**kwargs):
    w = np.random.default_rng(0).standard_normal((ROWS, DIM)).astype(np.float32)
    ours, theirs = (
        ember.nn.Embedding(ROWS, DIM, sparse=True, **kwargs),
        torch.nn.Embedding(ROWS, DIM, sparse=True, **kwargs),
    )
    with ember.no_grad():
        ours.weight.copy_(ember.tensor(w))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
    return ours, theirs


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}])
def test_sparse_weight_gradient(kwargs):
    ours, theirs = embeddings(**kwargs)
    batch = np.array([[1, 2, 1, 7], [2, 0, 9, 1]])
    (ours(ember.tensor(batch)) ** 2).sum().backward()
    (theirs(torch.tensor(batch)) ** 2).sum().backward()
    g_o, g_t = ours.weight.grad, theirs.weight.grad
    assert g_o.is_sparse and g_t.is_sparse
    assert g_o.is_coalesced() == g_t.is_coalesced()
    np.testing.assert_array_equal(g_o._indices().numpy(), g_t._indices().numpy())
    np.testing.assert_allclose(g_o._values().numpy(), g_t._values().numpy(), rtol=1e-6)


def test_scale_grad_by_freq_is_refused_with_sparse_gradients():
    ours, theirs = embeddings(scale_grad_by_freq=True)
    with pytest.raises(RuntimeError) as expected:
        theirs(torch.tensor([1, 1])).sum().backward()
    with pytest.raises(RuntimeError) as got:
        ours(ember.tensor([1, 1])).sum().backward()
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("options", [{"lr": 0.05}, {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "maximize": True}])
def test_sparse_adam_trains_as_pytorch(options):
    ours, theirs = embeddings(padding_idx=3)
    opt_o = ember.optim.SparseAdam(ours.parameters(), **options)
    opt_t = torch.optim.SparseAdam(theirs.parameters(), **options)
    rng = np.random.default_rng(1)
    for _ in range(20):
        batch = rng.integers(0, ROWS, size=(3, 5))
        target = rng.standard_normal((3, 5, DIM)).astype(np.float32)
        for module, opt, lib in ((ours, opt_o, ember), (theirs, opt_t, torch)):
            opt.zero_grad()
            ((module(lib.tensor(batch)) - lib.tensor(target)) ** 2).mean().backward()
            opt.step()
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    state_o, state_t = opt_o.state[ours.weight], opt_t.state[theirs.weight]
    assert state_o["step"] == state_t["step"] == 20
    np.testing.assert_allclose(state_o["exp_avg_sq"].numpy(), state_t["exp_avg_sq"].numpy(), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_sparse_weight_gradient(mode, padding_idx):
    w = np.random.default_rng(2).standard_normal((ROWS, DIM)).astype(np.float32)
    inputs, offsets = np.array([0, 2, 2, 5, 1, 0, 9]), np.array([0, 2, 4])
    grads = []
    for lib in (ember, torch):
        weight = lib.tensor(w, requires_grad=True)
        out = lib.nn.functional.embedding_bag(
            lib.tensor(inputs), weight, lib.tensor(offsets), mode=mode, sparse=True, padding_idx=padding_idx
        )
        (out**2).sum().backward()
        grads.append(weight.grad)
    ours, theirs = grads
    assert ours.is_sparse and theirs.is_sparse and ours.is_coalesced() == theirs.is_coalesced()
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
    np.testing.assert_allclose(ours._values().numpy(), theirs._values().numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_bag_max_mode_refuses_sparse_weights():
    with pytest.raises(ValueError) as expected:
        torch.nn.functional.embedding_bag(torch.tensor([[0, 1]]), torch.ones(3, 2), mode="max", sparse=True)
    with pytest.raises(ValueError) as got:
        ember.nn.functional.embedding_bag(ember.tensor([[0, 1]]), ember.ones(3, 2), mode="max", sparse=True)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize(
    "name, options",
    [
        ("SGD", {"lr": 0.1}),
        ("SGD", {"lr": 0.1, "momentum": 0.9}),
        ("Adagrad", {"lr": 0.1}),
        ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1, "maximize": True}),
        ("Adagrad", {"lr": 0.1, "foreach": True}),
    ],
)
def test_other_optimizers_with_sparse_gradients(name, options):
    ours, theirs = embeddings()
    opt_o = getattr(ember.optim, name)(ours.parameters(), **options)
    opt_t = getattr(torch.optim, name)(theirs.parameters(), **options)
    rng = np.random.default_rng(3)
    for step in range(6):
        batch = rng.integers(0, ROWS, size=(2, 4))
        for module, opt, lib in ((ours, opt_o, ember), (theirs, opt_t, torch)):
            opt.zero_grad(set_to_none=step % 2 == 0)
            (module(lib.tensor(batch)) ** 2).sum().backward()
            opt.step()
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_adagrad_weight_decay_refuses_sparse_gradients():
    errors = []
    for lib, module in zip((ember, torch), embeddings(), strict=True):
        opt = lib.optim.Adagrad(module.parameters(), weight_decay=0.1)
        module(lib.tensor([1, 2])).sum().backward()
        with pytest.raises(RuntimeError) as error:
            opt.step()
        errors.append(str(error.value))
    assert errors[0] == errors[1]
