"""glibc malloc tuning at import: applied by default on glibc, and left alone where the user set
MALLOC_* or EMBER_MALLOC_TUNING=0 (checked in fresh interpreters, since it runs once)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is Linux's")


def _applied(**env) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "EMBER_MALLOC_TUNING"}
    clean.update(env)
    code = "import ember.core.malloc_tuning as m; print(m.applied)"
    return subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, check=True).stdout


def test_applied_by_default_on_glibc():
    import ctypes

    if not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):
        pytest.skip("not glibc")
    assert _applied().strip() == "True"


def test_the_users_malloc_settings_win():
    assert _applied(MALLOC_ARENA_MAX="2").strip() == "False"


def test_it_can_be_turned_off():
    assert _applied(EMBER_MALLOC_TUNING="0").strip() == "False"
