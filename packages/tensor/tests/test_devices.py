"""Devices against PyTorch: parsing, equality, printing; the default device; backends that no
installed package provides; and the entry-point autoload switch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from opinfo import ORACLE_MISSING, torch

import ember
from ember.core import devices

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

GOOD = [("cpu",), ("cuda",), ("cuda:1",), ("cuda", 1), ("meta",), ("cpu", 0), ("cpu:0",), ("mps",)]
BAD = [("gpu",), ("cuda:-1",), ("cuda:x",), ("cuda:1:2",), ("",), ("CUDA",), ("cuda", -1), ("cuda:1", 1), (" cuda",)]


@needs_torch
@pytest.mark.parametrize("args", GOOD, ids=repr)
def test_device_parsing_matches_pytorch(args):
    ours, theirs = ember.device(*args), torch.device(*args)
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert str(ours) == str(theirs)
    assert repr(ours) == repr(theirs)
    assert ours == ember.device(str(theirs)) and hash(ours) == hash(ember.device(str(theirs)))
    assert ember.device(ours) == ours


@needs_torch
@pytest.mark.parametrize("args", BAD, ids=repr)
def test_bad_devices_raise_like_pytorch(args):
    with pytest.raises(Exception) as their_error:
        torch.device(*args)
    with pytest.raises(their_error.type):
        ember.device(*args)


@needs_torch
def test_equality_and_hash_like_pytorch():
    pairs = [("cuda", "cuda:0"), ("cuda:0", "cuda:0"), ("cpu", "cpu:0"), ("cpu", "meta"), ("cuda:1", "cuda:2")]
    for a, b in pairs:
        assert (ember.device(a) == ember.device(b)) == (torch.device(a) == torch.device(b)), (a, b)
    assert len({ember.device("cuda:1"), ember.device("cuda", 1), ember.device(1)}) == 1
    for other in ("cpu", "not a device", 3, None):
        assert (ember.device("cpu") == other) == (torch.device("cpu") == other)


def test_an_index_alone_names_the_accelerator():
    # PyTorch 2.13 resolves a bare index to the current accelerator (and raises without one); ours is CUDA.
    assert ember.device(0) == ember.device("cuda:0") and ember.device(3) == ember.device("cuda", 3)
    assert repr(ember.device(1)) == "device(type='cuda', index=1)"


def test_device_type_errors():
    with pytest.raises(TypeError):
        ember.device(1.5)
    with pytest.raises(TypeError):
        ember.device(None)


def test_unprovided_device_type_raises_runtime_error_naming_it(monkeypatch):
    monkeypatch.setattr(devices, "_autoloaded", True)  # no entry points are consulted again
    for make in (
        lambda: ember.zeros(2, device="xpu"),
        lambda: ember.empty(3, device="hpu:0"),
        lambda: ember.tensor([1.0], device="xpu"),
        lambda: ember.arange(3, device="mps"),
        lambda: ember.zeros(2).to("xpu"),
    ):
        with pytest.raises(RuntimeError, match=r"'(xpu|hpu|mps)'"):
            make()


def test_register_backend_validates_the_type():
    with pytest.raises(ValueError):
        ember.register_backend("tpu", object())


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_autoload_switch_skips_entry_points():
    code = """
        import importlib.metadata as md
        calls = []

        class Entry:
            name = "fake"
            def load(self):
                calls.append("load")
                return lambda: calls.append("register")

        real = md.entry_points
        md.entry_points = lambda group=None, **kw: [Entry()] if group == "ember.backends" else real(group=group, **kw)
        import ember.core.devices as devices
        devices.entry_points = md.entry_points
        import ember
        devices.autoload_backends()
        print(calls)
    """
    on = _run(code, EMBER_DEVICE_BACKEND_AUTOLOAD="1")
    off = _run(code, EMBER_DEVICE_BACKEND_AUTOLOAD="0")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    assert on.stdout.strip() == "['load', 'register']"
    assert off.stdout.strip() == "[]"


def test_autoload_runs_once(monkeypatch):
    calls = []

    class Entry:
        def load(self):
            return lambda: calls.append("register")

    monkeypatch.setattr(devices, "_autoloaded", False)
    monkeypatch.setattr(devices, "entry_points", lambda group: [Entry()] if group == "ember.backends" else [])
    monkeypatch.delenv("EMBER_DEVICE_BACKEND_AUTOLOAD", raising=False)
    devices.autoload_backends()
    devices.autoload_backends()
    assert calls == ["register"]
    monkeypatch.setattr(devices, "_autoloaded", False)
    monkeypatch.setenv("EMBER_DEVICE_BACKEND_AUTOLOAD", "0")
    devices.autoload_backends()
    assert calls == ["register"]


# -- factories on the meta device and the default device ------------------------------------------

FACTORIES = [
    lambda lib, **kw: lib.empty(2, 3, **kw),
    lambda lib, **kw: lib.zeros(2, 3, **kw),
    lambda lib, **kw: lib.ones((4,), **kw),
    lambda lib, **kw: lib.full((2, 2), 1.5, **kw),
    lambda lib, **kw: lib.arange(5, **kw),
    lambda lib, **kw: lib.linspace(0, 1, 5, **kw),
    lambda lib, **kw: lib.eye(3, **kw),
    lambda lib, **kw: lib.empty_strided((2, 3), (1, 2), **kw),
    lambda lib, **kw: lib.tensor([1, 2], **kw),
]


def _meta_matches(ours, theirs) -> None:
    assert ours.device.type == theirs.device.type == "meta"
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


@needs_torch
@pytest.mark.parametrize("make", FACTORIES)
def test_factories_on_meta(make):
    _meta_matches(make(ember, device="meta"), make(torch, device="meta"))
    _meta_matches(make(ember, device=ember.device("meta")), make(torch, device="meta"))


@needs_torch
@pytest.mark.parametrize("make", FACTORIES)
def test_device_context_manager(make):
    with ember.device("meta") as d, torch.device("meta"):
        assert d == ember.device("meta") and ember.get_default_device() == d
        _meta_matches(make(ember), make(torch))
        assert make(ember, device="cpu").device.type == "cpu"
    assert ember.get_default_device().type == "cpu"
    assert make(ember).device.type == "cpu"


@needs_torch
@pytest.mark.parametrize("make", FACTORIES)
def test_set_default_device(make):
    try:
        ember.set_default_device("meta")
        torch.set_default_device("meta")
        assert ember.get_default_device().type == "meta"
        _meta_matches(make(ember), make(torch))
        like = ember.zeros_like(ember.empty(2, 3, device="cpu"))
        assert like.device.type == "cpu"  # *_like follows its input, not the default
    finally:
        ember.set_default_device(None)
        torch.set_default_device(None)
    assert ember.get_default_device().type == "cpu"
    assert make(ember).device.type == "cpu"


def test_nested_device_contexts_restore():
    with ember.device("meta"):
        with ember.device("cpu"):
            assert ember.zeros(1).device.type == "cpu"
        assert ember.zeros(1).device.type == "meta"
    assert ember.zeros(1).device.type == "cpu"
