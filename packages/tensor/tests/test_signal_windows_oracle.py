"""ember.signal.windows against torch.signal.windows: values, dtypes, gradients and errors."""

import numpy as np
import pytest

import ember
import ember.signal
import ember.signal.windows as windows

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
import torch.signal.windows as torch_windows  # noqa: E402

NAMES = windows.__all__
EXTRA = {"general_cosine": {"a": [0.46, 0.3, 0.24]}}
PARAMETERS = [
    ("exponential", {"tau": 2.5}),
    ("exponential", {"tau": 0.5, "center": 1.5, "sym": False}),
    ("gaussian", {"std": 0.7}),
    ("kaiser", {"beta": 0.0}),
    ("kaiser", {"beta": 4.2}),
    ("general_hamming", {"alpha": 0.6}),
    ("general_cosine", {"a": (1.0,)}),
]


def _pair(name, M, **kwargs):
    kwargs = {**EXTRA.get(name, {}), **kwargs}
    theirs_kwargs = dict(kwargs)
    if "dtype" in kwargs:
        theirs_kwargs["dtype"] = getattr(torch, str(kwargs["dtype"]).split(".")[-1])
    return getattr(windows, name)(M, **kwargs), getattr(torch_windows, name)(M, **theirs_kwargs)


def test_the_namespaces():
    assert sorted(windows.__all__) == sorted(torch_windows.__all__)
    assert ember.signal.windows is windows
    assert ember.signal.__all__ == ["windows"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("M", [0, 1, 2, 7, 16])
def test_values_float64(name, sym, M):
    ours, theirs = _pair(name, M, sym=sym, dtype=ember.float64)
    assert ours.dtype == ember.float64 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sym", [True, False])
def test_values_default_dtype(name, sym):
    ours, theirs = _pair(name, 11, sym=sym)
    assert ours.dtype == ember.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize(("name", "kwargs"), PARAMETERS)
def test_window_parameters(name, kwargs):
    ours, theirs = _pair(name, 9, dtype=ember.float64, **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["hann", "kaiser", "gaussian", "bartlett"])
def test_requires_grad_gives_a_differentiable_window(name):
    ours, theirs = _pair(name, 6, requires_grad=True, dtype=ember.float64)
    assert ours.requires_grad and theirs.requires_grad
    assert (ours.grad_fn is None) == (theirs.grad_fn is None)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda w: w.hann(-1), ValueError),
        (lambda w: w.hann(4, dtype=_dtype(w, "int64")), ValueError),
        (lambda w: w.hann(4, dtype=_dtype(w, "float16")), ValueError),
        (lambda w: w.hann(4, layout=_dtype(w, "sparse_coo")), ValueError),
        (lambda w: w.exponential(4, tau=0.0), ValueError),
        (lambda w: w.exponential(4, center=1.0), ValueError),
        (lambda w: w.gaussian(4, std=-1.0), ValueError),
        (lambda w: w.kaiser(4, beta=-1.0), ValueError),
        (lambda w: w.general_cosine(4, a=[]), ValueError),
        (lambda w: w.general_cosine(4, a=3), TypeError),
    ],
)
def test_errors_match(call, error):
    with pytest.raises(error) as theirs:
        call(torch_windows)
    with pytest.raises(error) as ours:
        call(windows)
    assert str(ours.value).replace("ember", "torch") == str(theirs.value)


def _dtype(module, name):
    return getattr(torch if module is torch_windows else ember, name)
