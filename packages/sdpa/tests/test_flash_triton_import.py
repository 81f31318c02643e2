"""flash_triton imports without Triton (the default test sessions lack it) and says so when called."""

import subprocess
import sys


def test_import_without_triton_and_clear_error_on_call():
    script = (
        "import sys; sys.modules['triton'] = None\n"
        "from ember.sdpa.kernels import flash_triton\n"
        "try:\n"
        "    flash_triton.forward(None, None, None, None, None)\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "needs Triton" in result.stdout and "pip install triton" in result.stdout
