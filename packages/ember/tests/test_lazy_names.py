"""Top-level names that live in packages imported on first use: ``ember.autocast``, ``ember.vmap``, ..."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ember


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("autocast", "ember.amp.autocast_mode"),
        ("is_autocast_enabled", "ember.amp.autocast_mode"),
        ("vmap", "ember.func"),
    ],
)
def test_a_lazy_name_is_the_packages_own(name, module):
    import importlib

    assert getattr(ember, name) is getattr(importlib.import_module(module), name)


def test_lazy_packages_stay_unimported_until_used():
    code = "import sys, ember; print(sorted(m for m in ('ember.nn', 'ember.amp', 'ember.func') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'ember' has no attribute 'no_such_thing'"):
        ember.no_such_thing  # noqa: B018
