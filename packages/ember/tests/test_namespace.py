"""Only the meta-package ships ``ember/__init__.py``; the others must be found through it."""

import os
import subprocess
import sys
from pathlib import Path

import ember
import ember.core
import ember.logs


def test_every_installed_package_is_on_the_ember_path():
    roots = {Path(p).resolve() for p in ember.__path__}
    for module in (ember.core, ember.logs):
        assert Path(module.__file__).resolve().parent.parent in roots


def test_import_ember_reads_ember_logs():
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    env["EMBER_LOGS"] = "+core"
    script = "import ember, logging; print(logging.getLogger('ember.core').getEffectiveLevel())"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "10"


def test_version():
    from importlib.metadata import version

    assert ember.__version__ == version("ember")


def test_distributed_is_imported_on_first_use():
    script = (
        "import sys, ember; assert 'ember.distributed' not in sys.modules; print(ember.distributed.TCPStore.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "TCPStore"


def test_unknown_attribute_raises_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nonexistent_thing'"):
        ember.nonexistent_thing  # noqa: B018
