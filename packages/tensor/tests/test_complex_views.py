"""Complex views, conjugates and stft without the oracle: values against NumPy's, storage shared
with the base, and stft/istft as each other's inverse."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _z(shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def test_parts_and_views_read_numpys_values():
    z = _z()
    t = ember.tensor(z)
    np.testing.assert_array_equal(t.real.numpy(), z.real)
    np.testing.assert_array_equal(t.imag.numpy(), z.imag)
    np.testing.assert_array_equal(ember.view_as_real(t).numpy(), np.stack([z.real, z.imag], -1))
    assert ember.view_as_real(t).stride() == (8, 2, 1)
    assert t.real.stride() == (8, 2) and t.imag.storage_offset() == 1


def test_writes_through_views_reach_the_complex_tensor():
    z = _z((4,))
    t = ember.tensor(z)
    version = t._version
    t.real.zero_()
    t.imag = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)
    np.testing.assert_array_equal(t.numpy(), [1j, 2j, 3j, 4j])
    assert t._version > version
    x = ember.zeros(2, 2, dtype=ember.float64)
    ember.view_as_complex(x).add_(3 - 1j)
    np.testing.assert_array_equal(x.numpy(), [[3.0, -1.0], [3.0, -1.0]])


def test_round_trip_of_the_views():
    t = ember.tensor(_z())[:, 1:]
    back = ember.view_as_complex(ember.view_as_real(t))
    assert back.shape == t.shape and back.stride() == t.stride() and back.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_view_as_complex_refuses_layouts_it_cannot_view():
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        ember.view_as_complex(ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        ember.view_as_complex(ember.zeros(2, 2).t())
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        ember.view_as_complex(ember.zeros(5)[1:].view(2, 2))
    halves = ember.view_as_complex(ember.tensor([[1.0, 2.0], [3.0, -4.0]], dtype=ember.float16))
    assert halves.dtype is ember.complex32 and halves.tolist() == [1 + 2j, 3 - 4j]


def test_conj_complex_and_polar():
    z = _z()
    t = ember.tensor(z)
    np.testing.assert_array_equal(t.conj().numpy(), z.conj())
    assert not t.conj().is_conj()
    np.testing.assert_array_equal(t.mH.numpy(), z.conj().T)
    r, a = np.abs(z), np.angle(z)
    np.testing.assert_allclose(ember.polar(ember.tensor(r), ember.tensor(a)).numpy(), z, rtol=1e-12)
    np.testing.assert_array_equal(ember.complex(ember.tensor(z.real), ember.tensor(z.imag)).numpy(), z)
    assert ember.complex(ember.ones(2), ember.ones(2)).dtype == ember.complex64


def test_stft_against_numpy_frames():
    x = np.random.default_rng(1).standard_normal(32)
    window = np.hanning(8)
    spec = ember.stft(ember.tensor(x), 8, hop_length=2, window=ember.tensor(window), center=False, return_complex=True)
    frames = np.stack([x[k : k + 8] for k in range(0, 32 - 8 + 1, 2)])
    np.testing.assert_allclose(spec.numpy(), np.fft.rfft(frames * window).T, rtol=1e-12, atol=1e-12)


def test_istft_inverts_stft():
    x = np.random.default_rng(2).standard_normal((2, 50))
    window = ember.hann_window(16, dtype=ember.float64)
    spec = ember.stft(ember.tensor(x), 16, hop_length=4, window=window, return_complex=True)
    back = ember.istft(spec, 16, hop_length=4, window=window, length=50)
    np.testing.assert_allclose(back.numpy(), x, rtol=1e-10, atol=1e-10)


def test_chalf_converts_to_complex32():
    half = ember.tensor([1.5, -2.0]).chalf()
    assert half.dtype is ember.complex32 and half.tolist() == [1.5 + 0j, -2.0 + 0j]
