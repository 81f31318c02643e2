"""The Philox stream against Random123's published known-answer vectors, and the float mappings
against float64 recomputations of their definitions."""

import numpy as np
import pytest

from ember.core import philox


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def path(request, monkeypatch):
    """Every test runs through the compiled kernel and through the NumPy fallback."""
    if request.param == "numpy":
        monkeypatch.setattr(philox, "_compiled", None)
    elif philox._compiled is None:
        pytest.skip("ember.core._philox was not built")
    return request.param


# (counter words, key words (k0, k1), expected output words): kat_vectors of Random123 1.09.
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF,) * 4,
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("counter", "key", "expected"), KAT)
def test_known_answers(counter, key, expected):
    seed = key[0] | (key[1] << 32)
    words = philox.philox4x32(seed, *(np.array([c]) for c in counter))
    assert tuple(int(w[0]) for w in words) == expected


def test_randint4x_known_answer_at_counter_zero():
    words = philox.randint4x(0, np.zeros(1, np.int64))
    assert tuple(int(w[0]) for w in words) == KAT[0][2]


def test_offsets_split_into_low_and_high_counter_words():
    seed = 987654321
    offsets = np.array([5, (7 << 32) | 3], dtype=np.int64)
    direct = philox.philox4x32(seed, np.array([5, 3]), np.array([0, 7]), np.zeros(2), np.zeros(2))
    for a, b in zip(philox.randint4x(seed, offsets), direct, strict=True):
        np.testing.assert_array_equal(a, b)


def test_uniform_in_unit_interval_and_matches_definition():
    words = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 12345], dtype=np.uint32)
    got = philox.uint_to_uniform(words)
    signed = words.astype(np.int64)
    signed = np.where(signed >= 2**31, signed - 2**32, signed)
    folded = np.where(signed < 0, -signed - 1, signed).astype(np.float32)
    np.testing.assert_array_equal(got, folded * np.float32(4.6566127342e-10))
    u = philox.rand(3, np.arange(100_000))
    assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.01


def test_normal_moments_and_determinism():
    z = philox.randn(11, np.arange(200_000))
    assert abs(float(z.mean())) < 0.01 and abs(float(z.std()) - 1.0) < 0.01
    np.testing.assert_array_equal(z, philox.randn(11, np.arange(200_000)))
    assert not np.array_equal(z, philox.randn(12, np.arange(200_000)))
