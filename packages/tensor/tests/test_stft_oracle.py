"""``ember.stft`` and ``ember.istft`` against PyTorch: values on random signals (batched or not, real
or complex), every parameter, errors, and gradients through both."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _signal(shape, complex_=False, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def _window(lib, name, n):
    if name is None:
        return None
    return getattr(lib, name)(n, dtype=lib.float64)


_CASES = [
    dict(n_fft=8),
    dict(n_fft=8, hop_length=3),
    dict(n_fft=16, hop_length=4, win_length=10, window="hann_window"),
    dict(n_fft=16, win_length=16, window="hamming_window", normalized=True),
    dict(n_fft=8, center=False, window="hann_window"),
    dict(n_fft=8, pad_mode="constant", window="hann_window"),
    dict(n_fft=8, pad_mode="replicate", window="hann_window"),
    dict(n_fft=8, pad_mode="circular"),
    dict(n_fft=10, onesided=False, window="hann_window"),
    dict(n_fft=10, win_length=6, hop_length=3, center=False, align_to_window=True, window="hann_window"),
    dict(n_fft=10, win_length=6, hop_length=3, center=False, align_to_window=False, window="hann_window"),
]


@pytest.mark.parametrize("shape", [(40,), (3, 40)], ids=str)
@pytest.mark.parametrize("case", _CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_stft_matches(case, shape):
    x = _signal(shape)
    results = []
    for lib in (ember, torch):
        kw = dict(case)
        kw["window"] = _window(lib, kw.pop("window", None), kw.get("win_length", kw["n_fft"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(lib.stft(lib.tensor(x), return_complex=True, **kw))
    ours, theirs = results
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", [(33,), (2, 33)], ids=str)
def test_stft_of_complex_signals_and_the_method(shape):
    x = _signal(shape, complex_=True)
    ours = ember.tensor(x).stft(8, hop_length=2, window=ember.hann_window(8, dtype=ember.float64))
    theirs = torch.tensor(x).stft(8, hop_length=2, window=torch.hann_window(8, dtype=torch.float64))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)


def test_return_complex_false_and_missing():
    x = _signal((20,))
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="stft requires the return_complex parameter be given for real inputs"):
            lib.stft(lib.tensor(x), 8, window=lib.ones(8, dtype=lib.float64))
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        ours = ember.stft(ember.tensor(x), 8, window=ember.ones(8, dtype=ember.float64), return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.stft(torch.tensor(x), 8, window=torch.ones(8, dtype=torch.float64), return_complex=False)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.stft(x, 64, return_complex=True),
        lambda lib, x: lib.stft(x, 8, hop_length=0, return_complex=True),
        lambda lib, x: lib.stft(x, 8, win_length=9, return_complex=True),
        lambda lib, x: lib.stft(x, 8, window=lib.ones(7, dtype=lib.float64), return_complex=True),
        lambda lib, x: lib.stft(x.reshape(1, 1, 20), 8, return_complex=True),
        lambda lib, x: lib.stft(x.to(lib.complex128), 8, onesided=True, return_complex=True),
        lambda lib, x: lib.stft(x.long(), 8, return_complex=True),
        lambda lib, x: lib.stft(x, 8, center=True, align_to_window=True, return_complex=True),
        lambda lib, x: lib.stft(x, 8, center=False, win_length=10, return_complex=True),
    ],
)
def test_stft_errors(call):
    x = _signal((20,))
    with pytest.raises(RuntimeError) as theirs, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(torch, torch.tensor(x))
    with pytest.raises(RuntimeError) as ours, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(ember, ember.tensor(x))
    assert str(ours.value) == _ours(theirs.value)


def _ours(error) -> str:
    """PyTorch's message as Ember words it: the first line, with Ember's type names."""
    return str(error).split("\n")[0].replace("torch.", "ember.")


_ROUND_TRIPS = [
    dict(n_fft=16, hop_length=4, window="hann_window"),
    dict(n_fft=16, hop_length=4, win_length=12, window="hann_window"),
    dict(n_fft=16, hop_length=8, window="hann_window", normalized=True),
    dict(n_fft=16, hop_length=4, center=False, window="hann_window"),
    dict(n_fft=8, hop_length=2),
]


@pytest.mark.parametrize("length", [None, 50, 90])
@pytest.mark.parametrize("shape", [(64,), (2, 64)], ids=str)
@pytest.mark.parametrize("case", _ROUND_TRIPS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_istft_matches(case, shape, length):
    spec = np.asarray(torch.stft(torch.tensor(_signal(shape)), 16, return_complex=True).numpy())
    if case["n_fft"] != 16:
        spec = np.asarray(torch.stft(torch.tensor(_signal(shape)), case["n_fft"], return_complex=True).numpy())
    spec = spec + 0.1 * _signal(spec.shape, complex_=True, seed=1)  # not exactly a signal's spectrum
    results = []
    for lib in (torch, ember):
        kw = dict(case)
        kw["window"] = _window(lib, kw.pop("window", None), kw.get("win_length", kw["n_fft"]))
        if kw.get("center") is False and kw["window"] is not None:
            kw["window"] = kw["window"] + 0.1  # a Hann window's zero at the ends fails NOLA there
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                results.append(lib.istft(lib.tensor(spec.copy()), length=length, **kw))
            except RuntimeError as error:
                results.append(error)
    theirs, ours = results
    if isinstance(theirs, RuntimeError):  # a shorter window's zero padding fails NOLA past the signal's end
        assert isinstance(ours, RuntimeError) and str(ours).split("\n")[0] == _ours(theirs)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-10)


def test_istft_two_sided_and_complex_output():
    x = _signal((2, 40), complex_=True)
    window = np.hanning(10) + 0.5
    spec = torch.stft(torch.tensor(x), 10, hop_length=3, window=torch.tensor(window), return_complex=True)
    for return_complex in (True, False):
        theirs = torch.istft(spec, 10, hop_length=3, window=torch.tensor(window), return_complex=return_complex)
        ours = ember.istft(
            ember.tensor(spec.numpy()), 10, hop_length=3, window=ember.tensor(window), return_complex=return_complex
        )
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, s: lib.istft(lib.view_as_real(s), 16),
        lambda lib, s: lib.istft(s, 12),
        lambda lib, s: lib.istft(s, 16, onesided=False),
        lambda lib, s: lib.istft(s, 16, hop_length=20),
        lambda lib, s: lib.istft(s, 16, win_length=20),
        lambda lib, s: lib.istft(s, 16, window=lib.ones(15, dtype=lib.float64)),
        lambda lib, s: lib.istft(s, 16, return_complex=True),
        lambda lib, s: lib.istft(s[0, 0], 16),
        lambda lib, s: lib.istft(s, 16, hop_length=4, window=lib.zeros(16, dtype=lib.float64)),
        lambda lib, s: lib.istft(s[:0], 16),
        lambda lib, s: lib.istft(s.unsqueeze(0).unsqueeze(0), 16),
        lambda lib, s: lib.istft(s, 16, window=lib.ones(16, dtype=lib.complex128)),
    ],
)
def test_istft_errors(call):
    spec = torch.stft(torch.tensor(_signal((64,))), 16, return_complex=True).numpy()
    with pytest.raises((RuntimeError, IndexError)) as theirs:
        call(torch, torch.tensor(spec))
    with pytest.raises(theirs.type) as ours:
        call(ember, ember.tensor(spec))
    assert str(ours.value).split("\n")[0] == _ours(theirs.value)


def test_gradients_through_stft_and_istft():
    x = _signal((2, 48))
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(x).requires_grad_(True)
        window = lib.hann_window(16, dtype=lib.float64)
        spec = lib.stft(t, 16, hop_length=4, window=window, return_complex=True)
        y = lib.istft(spec * (1 + 0.5j), 16, hop_length=4, window=window, length=48)
        (y.pow(2).sum() + spec.abs().sum()).backward()
        grads.append(np.asarray(t.grad.numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-10)
