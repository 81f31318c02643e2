"""The top-level forms of nn.functional's functions (``ember.pixel_shuffle``, ``ember.selu_``, ...)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember._nn_functions as aliases

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def test_every_alias_is_reachable_from_ember():
    lazy = {name for name, home in ember._LAZY_ATTRIBUTES.items() if home == "ember._nn_functions"}
    assert lazy == set(aliases.NAMES)
    for name in aliases.NAMES:
        assert callable(getattr(ember, name)) and name in dir(ember)


@pytest.mark.parametrize(
    ("name", "shape", "args"),
    [
        ("pixel_shuffle", (1, 8, 2, 3), (2,)),
        ("pixel_unshuffle", (1, 2, 4, 6), (2,)),
        ("selu", (3, 4), ()),
        ("celu", (3, 4), (0.5,)),
        ("hardshrink", (3, 4), (0.3,)),
        ("threshold", (3, 4), (0.1, 20.0)),
        ("max_pool1d", (2, 3, 9), (3,)),
        ("avg_pool1d", (2, 3, 9), (2,)),
        ("adaptive_avg_pool1d", (2, 3, 9), (4,)),
        ("pdist", (5, 3), ()),
        ("channel_shuffle", (1, 6, 2, 2), (3,)),
    ],
)
def test_matches_pytorch(name, shape, args):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours = getattr(ember, name)(ember.tensor(a), *args)
    theirs = getattr(torch, name)(torch.tensor(a), *args)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_adaptive_max_pool1d_returns_values_and_indices():
    a = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    ours, theirs = ember.adaptive_max_pool1d(ember.tensor(a), 3), torch.adaptive_max_pool1d(torch.tensor(a), 3)
    for x, y in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_inplace_forms_write_their_input():
    a = np.linspace(-2, 2, 8, dtype=np.float32)
    for name, args in (("selu_", ()), ("celu_", (1.0,)), ("threshold_", (0.0, -1.0))):
        ours, theirs = ember.tensor(a), torch.tensor(a)
        assert getattr(ember, name)(ours, *args) is ours
        getattr(torch, name)(theirs, *args)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_constants():
    assert (ember.pi, ember.e, ember.inf) == (torch.pi, torch.e, torch.inf)
    assert ember.nan != ember.nan and ember.newaxis is None


@pytest.mark.parametrize(("mode", "level"), [("default", 0), ("warn", 1), ("error", 2), (1, 1), (0, 0)])
def test_deterministic_debug_mode(mode, level):
    try:
        ember.set_deterministic_debug_mode(mode)
        torch.set_deterministic_debug_mode(mode)
        assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == level
        assert ember.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
    finally:
        ember.set_deterministic_debug_mode(0)
        torch.set_deterministic_debug_mode(0)
