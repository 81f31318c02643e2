"""erf and erfinv (``ember.core.special``) against float64 references from Python's ``math``, and
through ``ember.erf``/``ember.erfinv`` against PyTorch in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
from ember.core import special

RNG = np.random.default_rng(7)
XS = np.concatenate(
    [
        RNG.uniform(-6, 6, 4000),
        RNG.uniform(-0.6, 0.6, 1000),
        np.linspace(-27, 27, 541),
        [0.5, -0.5, 4.0, -4.0, 0.4999999999, 4.0000001, 1e-300, 5e-324, 26.5, -26.5],
    ]
)


def test_erf_matches_math_erf():
    got = special.erf(XS)
    want = np.array([math.erf(v) for v in XS])
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_erfc_keeps_relative_accuracy_in_the_tail():
    got = special.erfc(XS)
    want = np.array([math.erfc(v) for v in XS])
    tiny = want < 1e-300  # beyond the subnormal range a relative error says nothing
    np.testing.assert_allclose(got[~tiny], want[~tiny], rtol=2e-15, atol=0)
    np.testing.assert_array_less(got[tiny], 1e-299)


def test_erf_special_values():
    got = special.erf(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0]))
    np.testing.assert_array_equal(got[1:], [1.0, -1.0, 0.0, -0.0])
    assert np.isnan(got[0])
    assert np.signbit(got[4])


def test_erf_and_erfc_on_arrays_larger_than_one_block():
    # Large arrays are evaluated block by block: every block, the last partial one included, must
    # hold its own elements' values, in the input's shape.
    values = np.concatenate([np.tile(XS, 13), [np.nan, np.inf, -np.inf, -0.0]])
    RNG.shuffle(values)
    x = values[: (values.size // 7) * 7].reshape(7, -1)
    assert x.size > special._BLOCK
    for fn, ref in ((special.erf, math.erf), (special.erfc, math.erfc)):
        got = fn(x)
        assert got.shape == x.shape
        want = np.array([ref(v) for v in x.ravel()]).reshape(x.shape)
        np.testing.assert_allclose(got, want, rtol=2e-15, atol=1e-300, equal_nan=True)


def test_erfinv_inverts_math_erf():
    ys = np.concatenate([RNG.uniform(-1, 1, 4000), np.logspace(-300, -1, 60), -np.logspace(-12, -1, 30)])
    x = special.erfinv(ys)
    back = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(back, ys, rtol=2e-15, atol=0)


def test_erfinv_near_one_inverts_math_erfc():
    # y close to +-1: 1 - |y| is exact, and erfc(|x|) must reproduce it to float64 precision.
    rest = np.logspace(-16, -1, 200)
    for sign in (1.0, -1.0):
        ys = sign * (1.0 - rest)
        x = special.erfinv(ys)
        assert np.all(np.sign(x) == sign)
        got = np.array([math.erfc(abs(v)) for v in x])
        np.testing.assert_allclose(got, 1.0 - np.abs(ys), rtol=2e-14, atol=0)


def test_erfinv_special_values():
    got = special.erfinv(np.array([1.0, -1.0, 1.5, -1.0000001, np.nan, 0.0, -0.0]))
    assert got[0] == np.inf and got[1] == -np.inf
    assert np.all(np.isnan(got[2:5]))
    assert got[5] == 0.0 and np.signbit(got[6])


@pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
@pytest.mark.parametrize("name, low, high", [("erf", -7.0, 7.0), ("erfinv", -1.0, 1.0)])
def test_float64_tensors_match_pytorch(name, low, high):
    values = RNG.uniform(low, high, 2000).tolist()
    ours = getattr(ember, name)(ember.tensor(values, dtype=ember.float64)).numpy()
    theirs = getattr(torch, name)(torch.tensor(values, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=4e-15, atol=1e-300)
