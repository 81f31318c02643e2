"""ember.masked.MaskedTensor against torch.masked.MaskedTensor: printed values, masks, gradients, errors."""

import warnings

import pytest

import ember
import ember.masked

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
import torch.masked  # noqa: E402, F811  (a submodule: import it)

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of MaskedTensors:UserWarning")

DATA = [[0.5, -1.0, 2.0], [3.0, 4.25, -5.0]]
MASK = [[True, False, True], [False, False, True]]
EXPRESSIONS = [
    lambda m, a: a,
    lambda m, a: a + 1,
    lambda m, a: a * a,
    lambda m, a: -a,
    lambda m, a: a.abs().exp(),
    lambda m, a: a > 1,
    lambda m, a: a * m.ones(2, 3, dtype=m.float64),
    lambda m, a: a.t(),
    lambda m, a: a.reshape(3, 2),
    lambda m, a: a[1],
    lambda m, a: a.unsqueeze(0)[0],
    lambda m, a: a.sum(),
    lambda m, a: a.sum(1),
    lambda m, a: a.sum(0, keepdim=True),
    lambda m, a: a.amax(),
    lambda m, a: a.amin(1),
    lambda m, a: a.mean(0),
    lambda m, a: a.prod(1),
    lambda m, a: a.var(1),
    lambda m, a: a.argmax(1),
    lambda m, a: m.softmax(a, 1),
    lambda m, a: a.to(m.float32),
]


def _pair():
    ours = ember.masked.masked_tensor(ember.tensor(DATA, dtype=ember.float64), ember.tensor(MASK))
    theirs = torch.masked.masked_tensor(torch.tensor(DATA, dtype=torch.float64), torch.tensor(MASK))
    return ours, theirs


@pytest.mark.parametrize("index", range(len(EXPRESSIONS)))
def test_printed_like_torch(index):
    ours, theirs = _pair()
    expression = EXPRESSIONS[index]
    assert repr(expression(ember, ours)) == repr(expression(torch, theirs))


def test_parts_and_predicates():
    ours, theirs = _pair()
    assert ember.masked.is_masked_tensor(ours) and not ember.masked.is_masked_tensor(ember.ones(1))
    assert ours.get_data().tolist() == theirs.get_data().tolist()
    assert ours.get_mask().tolist() == theirs.get_mask().tolist()
    assert ours.to_tensor(0).tolist() == theirs.to_tensor(0).tolist()
    assert tuple(ours.shape) == (2, 3) and ours.dtype == ember.float64 and not ours.is_sparse
    with pytest.warns(UserWarning, match="prototype stage"):
        ember.masked.masked_tensor(ember.ones(2), ember.ones(2, dtype=ember.bool))


def test_gradients_of_a_leaf_through_pointwise_ops_and_views():
    grads = []
    for module in (ember, torch):
        mask = module.tensor([True, False, True])
        leaf = module.masked.masked_tensor(module.tensor([1.0, 2.0, 3.0]), mask, requires_grad=True)
        out = (leaf * 2).exp().reshape(3)
        out.backward(module.masked.masked_tensor(module.ones(3), mask))
        grads.append(leaf.grad)
    ours, theirs = grads
    assert ours.get_mask().tolist() == theirs.get_mask().tolist()
    assert ours.to_tensor(0).tolist() == pytest.approx(theirs.to_tensor(0).tolist(), rel=1e-6)


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda m: m.masked.masked_tensor([1.0], m.tensor([True])), TypeError),
        (lambda m: m.masked.masked_tensor(m.ones(2), m.ones(2)), TypeError),
        (lambda m: m.masked.masked_tensor(m.ones(2), m.ones(3, dtype=m.bool)), ValueError),
        (lambda m: m.masked.masked_tensor(m.ones(2, 1), m.ones(2, dtype=m.bool)), ValueError),
        (lambda m: m.masked.masked_tensor(m.ones(2, dtype=m.complex64), m.ones(2, dtype=m.bool)), TypeError),
    ],
)
def test_construction_errors(build, error):
    with pytest.raises(error) as theirs:
        build(torch)
    with pytest.raises(error) as ours:
        build(ember)
    assert str(ours.value) == str(theirs.value)


def test_masks_must_match():
    for module in (ember, torch):
        a = module.masked.masked_tensor(module.ones(2), module.tensor([True, False]))
        b = module.masked.masked_tensor(module.ones(2), module.tensor([True, True]))
        with pytest.raises(ValueError, match="Input masks must match"):
            a + b


def test_what_is_not_built_says_so():
    leaf = ember.masked.masked_tensor(ember.ones(3), ember.ones(3, dtype=ember.bool), requires_grad=True)
    with pytest.raises(NotImplementedError, match="requires grad"):
        leaf.sum()
    assert repr(leaf.detach().sum()) == "MaskedTensor(  3.0000, True)"
    with pytest.raises(NotImplementedError, match="as_masked_tensor"):
        ember.masked.as_masked_tensor(ember.ones(2, requires_grad=True), ember.ones(2, dtype=ember.bool))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = ember.masked.as_masked_tensor(ember.ones(2), ember.tensor([True, False]))
    assert repr(plain) == "MaskedTensor(\n  [  1.0000,       --]\n)"
