"""``ember.cpu``, ``ember.get_device_module``, ``ember.version`` and the inter-op thread count."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ember


def test_cpu_module_answers_for_the_one_cpu():
    assert ember.cpu.is_available() and ember.cpu.is_initialized()
    assert ember.cpu.device_count() == 1
    assert ember.cpu.current_device() == "cpu"
    ember.cpu.synchronize()
    ember.cpu.set_device("cpu")
    with pytest.raises(ValueError, match="expected a cpu device"):
        ember.cpu.set_device("meta")
    stream = ember.cpu.current_stream()
    assert stream.query()
    with ember.cpu.stream(stream):
        assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]
    assert ember.cpu.Event().query()


def test_get_device_module():
    assert ember.get_device_module() is ember.cpu  # no accelerator here
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cuda", 0)) is ember.cuda
    assert not ember.get_device_module("cuda").is_available()
    with pytest.raises(RuntimeError, match="'mps' does not have a corresponding module"):
        ember.get_device_module("mps")


def test_version_says_there_is_no_cuda():
    assert ember.version.cuda is None and ember.version.hip is None
    assert ember.version.__version__ == ember.__version__


def test_interop_threads_are_set_once():
    code = """
import ember
assert ember.get_num_interop_threads() >= 1
for bad, kind in ((0, RuntimeError), (1.5, TypeError)):
    try:
        ember.set_num_interop_threads(bad)
    except kind:
        pass
    else:
        raise SystemExit(f"{bad!r} was accepted")
ember.set_num_interop_threads(3)
assert ember.get_num_interop_threads() == 3
try:
    ember.set_num_interop_threads(2)
except RuntimeError as e:
    assert "cannot set number of interop threads" in str(e)
else:
    raise SystemExit("a second call was accepted")
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
