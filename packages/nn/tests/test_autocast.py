"""ember.autocast against torch.autocast: which ops run in which dtype, the numbers, and the region's rules."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ember
import ember.amp

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the test oracle) is not installed")


def _lib_f(lib):
    return lib.nn.functional


# (name, function of (lib, x)) where x is a 4x4 floating tensor: each op family autocast touches.
CASES = [
    ("mm", lambda lib, x: lib.mm(x, x)),
    ("matmul", lambda lib, x: x @ x),
    ("linear", lambda lib, x: _lib_f(lib).linear(x, x, x[0])),
    ("addmm", lambda lib, x: lib.addmm(x, x, x)),
    ("bmm", lambda lib, x: lib.bmm(x[None], x[None])),
    ("baddbmm", lambda lib, x: lib.baddbmm(x[None], x[None], x[None])),
    ("einsum", lambda lib, x: lib.einsum("ij,jk->ik", x, x)),
    ("conv2d", lambda lib, x: _lib_f(lib).conv2d(x[None, None], x[None, None, :2, :2])),
    ("conv1d", lambda lib, x: _lib_f(lib).conv1d(x[None], x[:, :, None])),
    ("mv", lambda lib, x: lib.mv(x, x[0])),
    ("softmax", lambda lib, x: _lib_f(lib).softmax(x, -1)),
    ("layer_norm", lambda lib, x: _lib_f(lib).layer_norm(x, (4,))),
    ("sum", lambda lib, x: x.sum()),
    ("exp", lambda lib, x: x.exp()),
    ("prod", lambda lib, x: x.prod()),
    ("cross_entropy", lambda lib, x: _lib_f(lib).cross_entropy(x, lib.tensor([0, 1, 2, 3]))),
    ("nll_loss", lambda lib, x: _lib_f(lib).nll_loss(x, lib.tensor([0, 1, 2, 3]))),
    ("mse_loss", lambda lib, x: _lib_f(lib).mse_loss(x, x * 0.5)),
    ("l1_loss", lambda lib, x: _lib_f(lib).l1_loss(x, x * 0.5)),
    ("smooth_l1_loss", lambda lib, x: _lib_f(lib).smooth_l1_loss(x, x * 0.5)),
    ("bce_with_logits", lambda lib, x: _lib_f(lib).binary_cross_entropy_with_logits(x, x.sigmoid())),
    ("reflection_pad", lambda lib, x: _lib_f(lib).pad(x[None], (1, 1), mode="reflect")),
    ("replication_pad", lambda lib, x: _lib_f(lib).pad(x[None], (1, 1), mode="replicate")),
    ("constant_pad", lambda lib, x: _lib_f(lib).pad(x, (1, 1))),
    ("cat", lambda lib, x: lib.cat([x, x.float()])),
    ("stack", lambda lib, x: lib.stack([x, x.float()])),
    ("cat_low", lambda lib, x: lib.cat([x, x])),
]
IN_DTYPES = ["float32", "bfloat16", "float16", "float64"]
MODES = ["bfloat16", "float16"]


def _to_numpy(t) -> np.ndarray:
    return np.asarray(t.detach().float().tolist() if t.dtype.is_floating_point else t.tolist(), dtype=np.float64)


@needs_torch
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize(("name", "fn"), CASES, ids=[c[0] for c in CASES])
def test_ops_run_in_pytorchs_dtypes_with_its_numbers(name, fn, in_dtype, mode):
    data = np.random.default_rng(0).standard_normal((4, 4)) + 2.0  # positive-ish for prod and losses
    x_t = torch.tensor(data, dtype=getattr(torch, in_dtype))
    x_e = ember.tensor(data, dtype=getattr(ember, in_dtype))
    try:
        with torch.autocast("cpu", dtype=getattr(torch, mode)):
            theirs = fn(torch, x_t)
    except RuntimeError:
        with pytest.raises(RuntimeError), ember.autocast("cpu", dtype=getattr(ember, mode)):
            fn(ember, x_e)
        return
    with ember.autocast("cpu", dtype=getattr(ember, mode)):
        ours = fn(ember, x_e)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], f"{name}: {ours.dtype} vs {theirs.dtype}"
    tol = {"bfloat16": 3e-2, "float16": 3e-3}.get(str(theirs.dtype).split(".")[-1], 1e-5)
    np.testing.assert_allclose(_to_numpy(ours), _to_numpy(theirs), rtol=tol, atol=tol * 4)


@needs_torch
def test_gradients_flow_back_in_the_inputs_dtype_with_pytorchs_values():
    data = np.random.default_rng(1).standard_normal((3, 4))
    w_data = np.random.default_rng(2).standard_normal((5, 4))
    results = []
    for lib in (torch, ember):
        x = lib.tensor(data, dtype=lib.float32)
        w = lib.tensor(w_data, dtype=lib.float32, requires_grad=True)
        with lib.autocast("cpu"):
            y = _lib_f(lib).linear(x, w)
            loss = _lib_f(lib).mse_loss(y, lib.zeros(3, 5))
        assert y.dtype == lib.bfloat16 and loss.dtype == lib.float32
        loss.backward()
        assert w.grad.dtype == lib.float32
        results.append((float(loss.detach()), _to_numpy(w.grad)))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-2)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=3e-2, atol=3e-2)


def test_a_disabled_inner_region_and_the_decorator():
    x = ember.randn(3, 3)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()
        with ember.autocast("cpu", enabled=False):
            assert (x @ x).dtype == ember.float32
        assert (x @ x).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")

    @ember.autocast("cpu", dtype=ember.float16)
    def product(a):
        return a @ a

    assert product(x).dtype == ember.float16
    assert (x @ x).dtype == ember.float32


def test_a_nested_region_defaults_to_the_enclosing_dtype():
    x = ember.randn(2, 2)
    with ember.autocast("cpu", dtype=ember.float16), ember.autocast("cpu"):
        assert ember.get_autocast_dtype("cpu") == ember.float16
        assert (x @ x).dtype == ember.float16
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16


def test_regions_are_thread_local():
    x = ember.randn(2, 2)
    seen = {}

    def other():
        seen["dtype"] = (x @ x).dtype
        seen["enabled"] = ember.is_autocast_enabled("cpu")

    with ember.autocast("cpu"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert (x @ x).dtype == ember.bfloat16
    assert seen == {"dtype": ember.float32, "enabled": False}


def test_the_autocast_level_is_off_after_the_region():
    from ember.core import dispatch

    assert not dispatch.is_level_enabled("autocast")
    with ember.autocast("cpu"):
        assert dispatch.is_level_enabled("autocast")
        assert dispatch._flags.slow
    assert not dispatch.is_level_enabled("autocast")
    assert not dispatch._flags.slow


def test_a_weight_is_cast_once_per_region():
    x = ember.randn(2, 3)
    w = ember.randn(3, 3, requires_grad=True)
    with ember.autocast("cpu"):
        a = x @ w
        b = x @ w
    assert a.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]
    with ember.autocast("cpu", cache_enabled=False):
        a = x @ w
        b = x @ w
    assert a.grad_fn.next_functions[1][0] is not b.grad_fn.next_functions[1][0]


def test_errors_and_warnings_as_pytorch():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(1)
    with pytest.raises(RuntimeError):
        ember.autocast("xyz")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'meta'"):
        ember.autocast("meta")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        region = ember.autocast("cpu", dtype=ember.float32)
    assert "CPU Autocast only supports dtypes of ember.bfloat16, ember.float16" in str(caught[0].message)
    with region:
        assert not ember.is_autocast_enabled("cpu")
    assert ember.amp.is_autocast_available("cpu") and not ember.amp.is_autocast_available("meta")
