"""Signal windows, ``logspace``, ``range``, ``asarray``, ``frombuffer`` and the derived random fills,
against PyTorch (the fills against their distributions, from a fixed seed)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 7, 8])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows(name, length, periodic, dtype):
    ours = getattr(ember, name)(length, periodic, dtype=getattr(ember, dtype))
    theirs = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
    assert ours.dtype == getattr(ember, dtype) and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_window_options_and_errors():
    np.testing.assert_allclose(
        ember.hamming_window(6, False, 0.6, 0.4).numpy(), torch.hamming_window(6, False, 0.6, 0.4).numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(
        ember.kaiser_window(9, True, 5.0).numpy(), torch.kaiser_window(9, True, 5.0).numpy(), 1e-5
    )
    assert ember.hann_window(4).dtype == ember.float32 and ember.hann_window(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ember.hann_window(4, dtype=ember.int64)


@pytest.mark.parametrize(
    ("args", "kwargs"), [((0, 3, 4), {}), ((-1, 1, 5), {"base": 2}), ((2, 0, 3), {}), ((1, 2, 0), {})]
)
def test_logspace(args, kwargs):
    for dtype in ("float32", "float64"):
        ours = ember.logspace(*args, **kwargs, dtype=getattr(ember, dtype))
        theirs = torch.logspace(*args, **kwargs, dtype=getattr(torch, dtype))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("args", [(1, 4), (0, 1, 0.25), (3, -1, -1.5)])
def test_range_includes_its_end(args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = ember.range(*args), torch.range(*args)
    assert ours.dtype == ember.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    with pytest.warns(UserWarning, match="deprecated"):
        ember.range(0, 2)


def test_asarray_shares_unless_asked_to_copy():
    t = ember.ones(3)
    assert ember.asarray(t) is t and ember.asarray(t, copy=True) is not t
    assert ember.asarray(t, dtype=ember.float64).dtype == ember.float64
    array = np.arange(4.0)
    shared = ember.asarray(array)
    array[0] = 7
    assert float(shared[0]) == 7.0
    assert ember.asarray([1, 2]).dtype == ember.int64 == getattr(ember, str(torch.asarray([1, 2]).dtype)[6:])


def test_frombuffer_shares_the_bytes():
    buffer = bytearray(np.arange(6, dtype=np.float32).tobytes())
    ours = ember.frombuffer(buffer, dtype=ember.float32, count=3, offset=4)
    theirs = torch.frombuffer(buffer, dtype=torch.float32, count=3, offset=4)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours[0] = 9
    assert np.frombuffer(buffer, np.float32)[1] == 9
    with pytest.raises(ValueError, match="multiple of element size"):
        ember.frombuffer(bytearray(6), dtype=ember.float32)


def test_derived_random_fills_follow_their_distributions():
    ember.manual_seed(0)
    x = ember.empty(20000, dtype=ember.float64)
    assert abs(float(x.cauchy_(1.0, 2.0).median()) - 1.0) < 0.1
    counts = x.geometric_(0.25)
    assert float(counts.min()) >= 1 and abs(float(counts.mean()) - 4.0) < 0.15
    logs = x.log_normal_(0.5, 0.5).log()
    assert abs(float(logs.mean()) - 0.5) < 0.02 and abs(float(logs.std()) - 0.5) < 0.02
    ember.manual_seed(3)
    first = ember.empty(5).cauchy_()
    ember.manual_seed(3)
    assert ember.equal(first, ember.empty(5).cauchy_())
    with pytest.raises(RuntimeError, match="p to be in"):
        x.geometric_(1.5)


def test_swapdims_and_anomaly_switch():
    assert ember.ones(2, 3).swapdims_(0, 1).shape == (3, 2)
    ember.set_anomaly_enabled(True, check_nan=False)
    try:
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    finally:
        ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled()
