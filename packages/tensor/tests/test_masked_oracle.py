"""ember.masked against torch.masked: reductions and normalizations with full, broadcast and no masks."""

import math

import numpy as np
import pytest

import ember
import ember.masked

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
import torch.masked  # noqa: E402, F811  (torch.masked is a submodule: import it)

RNG = np.random.RandomState(0)
VALUES = RNG.randn(3, 4, 5)
FULL_MASK = RNG.rand(3, 4, 5) > 0.4
FULL_MASK[1, 2] = False  # a row with every element out
FULL_MASK[:, :, 3] = False  # and a column
MASKS = {"full": FULL_MASK, "broadcast": RNG.rand(5) > 0.3, "none": None}
REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "var", "std", "norm"]
NORMALIZATIONS = ["softmax", "log_softmax", "softmin", "cumsum", "cumprod", "normalize"]


def _ours(array, dtype="float64"):
    return ember.tensor(array).to(getattr(ember, dtype))


def _theirs(array, dtype="float64"):
    return torch.tensor(array).to(getattr(torch, dtype))


def _mask_pair(name):
    mask = MASKS[name]
    if mask is None:
        return None, None
    return ember.tensor(mask), torch.tensor(mask)


def _close(ours, theirs, rtol=1e-12):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=1e-12, equal_nan=True)


def _call(module, name, x, mask, **kwargs):
    if name == "norm":
        return module.norm(x, kwargs.pop("ord", 2.0), kwargs.pop("dim", None), mask=mask, **kwargs)
    if name == "normalize":
        return module.normalize(x, kwargs.pop("ord", 2.0), kwargs.pop("dim"), mask=mask, **kwargs)
    return getattr(module, name)(x, mask=mask, **kwargs)


def test_the_names():
    assert set(ember.masked.__all__) == set(torch.masked.__all__)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize(("dim", "keepdim"), [(None, False), (2, False), ((0, 2), True), (-1, True), ((), False)])
def test_reductions(name, mask, dim, keepdim):
    ours_mask, their_mask = _mask_pair(mask)
    ours = _call(ember.masked, name, _ours(VALUES), ours_mask, dim=dim, keepdim=keepdim)
    theirs = _call(torch.masked, name, _theirs(VALUES), their_mask, dim=dim, keepdim=keepdim)
    _close(ours, theirs)


@pytest.mark.parametrize("name", NORMALIZATIONS + ["median", "argmax", "argmin"])
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("dim", [0, -1])
def test_along_one_dim(name, mask, dim):
    ours_mask, their_mask = _mask_pair(mask)
    _close(
        _call(ember.masked, name, _ours(VALUES), ours_mask, dim=dim),
        _call(torch.masked, name, _theirs(VALUES), their_mask, dim=dim),
    )


INTEGER_CASES = [
    (name, dtype)
    for name in ("sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod")
    for dtype in ("int64", "int32", "uint8", "bool")
    if dtype != "bool" or name in ("sum", "prod")  # PyTorch has no identity for the maxima of bool
]


@pytest.mark.parametrize(("name", "dtype"), INTEGER_CASES)
def test_integer_inputs(name, dtype):
    values = RNG.randint(0, 4, size=(3, 5))
    mask = RNG.rand(3, 5) > 0.5
    ours = getattr(ember.masked, name)(_ours(values, dtype), 1, mask=ember.tensor(mask))
    theirs = getattr(torch.masked, name)(_theirs(values, dtype), 1, mask=torch.tensor(mask))
    _close(ours, theirs)


@pytest.mark.parametrize(
    "kwargs",
    [{"ord": 1.0}, {"ord": math.inf}, {"ord": -math.inf}, {"ord": 0.5}, {"ord": 2.0, "dtype": "float64"}],
)
def test_norm_orders(kwargs):
    ours_kwargs, their_kwargs = dict(kwargs), dict(kwargs)
    source = "float64"
    if "dtype" in kwargs:  # a float32 input reduced in float64
        ours_kwargs["dtype"], their_kwargs["dtype"], source = ember.float64, torch.float64, "float32"
    ours_mask, their_mask = _mask_pair("full")
    _close(
        _call(ember.masked, "norm", _ours(VALUES, source), ours_mask, dim=1, **ours_kwargs),
        _call(torch.masked, "norm", _theirs(VALUES, source), their_mask, dim=1, **their_kwargs),
        rtol=1e-6,
    )


@pytest.mark.parametrize("kwargs", [{"unbiased": False}, {"correction": 2}, {"correction": 0.5, "keepdim": True}])
def test_var_std_corrections(kwargs):
    ours_mask, their_mask = _mask_pair("full")
    for name in ("var", "std"):
        _close(
            getattr(ember.masked, name)(_ours(VALUES), 2, mask=ours_mask, **kwargs),
            getattr(torch.masked, name)(_theirs(VALUES), 2, mask=their_mask, **kwargs),
        )


def test_var_of_integers_is_float32():
    values = RNG.randint(0, 9, size=(4, 6))
    mask = RNG.rand(4, 6) > 0.3
    _close(
        ember.masked.var(_ours(values, "int64"), 1, mask=ember.tensor(mask)),
        torch.masked.var(_theirs(values, "int64"), 1, mask=torch.tensor(mask)),
        rtol=1e-6,
    )


def test_logaddexp():
    a, b = RNG.randn(6), RNG.randn(6)
    ma, mb = RNG.rand(6) > 0.5, RNG.rand(6) > 0.5
    ours = ember.masked.logaddexp(_ours(a), _ours(b), input_mask=ember.tensor(ma), other_mask=ember.tensor(mb))
    theirs = torch.masked.logaddexp(_theirs(a), _theirs(b), input_mask=torch.tensor(ma), other_mask=torch.tensor(mb))
    _close(ours, theirs)


def test_the_gradient_of_a_masked_sum_is_the_mask():
    ours_x = _ours(VALUES).requires_grad_()
    theirs_x = _theirs(VALUES).requires_grad_()
    ember.masked.sum(ours_x, 1, mask=ember.tensor(FULL_MASK)).sum().backward()
    torch.masked.sum(theirs_x, 1, mask=torch.tensor(FULL_MASK)).sum().backward()
    _close(ours_x.grad, theirs_x.grad)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda m, x: m.mean(x.to(_dtype(m, "int64"))), ValueError),
        (lambda m, x: m.sum(x, (1, 1)), RuntimeError),
        (lambda m, x: m.sum(x, 3), IndexError),
        (lambda m, x: m.sum(x, mask=x[None] > 0), IndexError),
        (lambda m, x: m.median(x.to(_dtype(m, "int64")), 0, mask=x < -100), ValueError),
    ],
)
def test_errors_match(call, error):
    with pytest.raises(error) as theirs:
        call(torch.masked, _theirs(VALUES))
    with pytest.raises(error) as ours:
        call(ember.masked, _ours(VALUES))
    assert str(ours.value).replace("ember", "torch") == str(theirs.value)


def _dtype(module, name):
    return getattr(torch if module is torch.masked else ember, name)
