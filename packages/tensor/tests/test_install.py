"""ember-tensor installs on its own: ``ember.core`` imports with ``ember`` as a namespace package."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

META_SRC = Path(__file__).resolve().parents[2] / "ember" / "src"


@pytest.mark.skipif(str(META_SRC) not in sys.path, reason="needs the workspace's editable installs")
def test_core_imports_without_the_meta_package():
    script = textwrap.dedent(
        f"""
        import sys
        meta = {str(META_SRC)!r}
        sys.path = [p for p in sys.path if p != meta]
        import ember.core, ember.logs
        assert getattr(ember, "__file__", None) is None, ember.__file__  # a namespace package
        from ember.core.aten.factories.factories import ones_function
        assert (ones_function(2) + 1).tolist() == [2.0, 2.0]
        try:  # no autograd level is installed: asking for gradients says so, not silently nothing
            ones_function(2, requires_grad=True)
        except RuntimeError as error:
            assert "import ember.autograd" in str(error), error
        else:
            raise AssertionError("requires_grad=True without ember-autograd did not raise")
        try:
            ones_function(2).sum().backward()
        except RuntimeError as error:
            assert "Tensor.backward needs the autograd level" in str(error), error
        else:
            raise AssertionError("backward without ember-autograd did not raise")
        print(ember.core.__name__)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ember.core"
