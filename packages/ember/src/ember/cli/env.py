"""``ember env``: what a bug report needs to know about this machine."""

from __future__ import annotations

import ctypes.util
import os
import platform
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distributions, version

import typer

# Third-party packages whose versions change Ember's behaviour or speed.
_NOTABLE = ("numpy", "ml_dtypes", "triton", "sympy", "structlog", "typer", "rich", "torch")
_PROBE_TIMEOUT_S = 10


def collect_env() -> list[tuple[str, str]]:
    rows = [
        ("Python", f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})"),
        ("Platform", platform.platform()),
    ]
    ours = sorted(
        {d.metadata["Name"].lower(): d.version for d in distributions() if _is_ember(d.metadata["Name"])}.items()
    )
    rows += [(name, ver) for name, ver in ours] or [("ember packages", "none installed")]
    for name in _NOTABLE:
        try:
            rows.append((name, version(name)))
        except PackageNotFoundError:
            rows.append((name, "not installed"))
    rows.append(("C++ compiler", find_compiler()))
    rows.append(("GPU", find_gpu()))
    return rows


def _is_ember(name: str | None) -> bool:
    return name is not None and (name.lower() == "ember" or name.lower().startswith("ember-"))


def _first_line(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if done.returncode == 0 and lines else None


def find_compiler() -> str:
    """The C++ compiler that generated kernels will be built with (``CXX``, else the first found)."""
    candidates = [os.environ["CXX"]] if os.environ.get("CXX") else ["c++", "g++", "clang++"]
    for candidate in candidates:
        path = shutil.which(candidate)
        if path is not None:
            return f"{path}: {_first_line([path, '--version']) or 'version unknown'}"
    return f"not found (looked for {', '.join(candidates)}; set CXX)"


def find_gpu() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        query = [smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
        try:
            done = subprocess.run(query, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0 and done.stdout.strip():
            return "; ".join(line.strip() for line in done.stdout.strip().splitlines())
    if ctypes.util.find_library("cuda") is not None:
        return "CUDA driver library found, but nvidia-smi lists no GPU"
    return "none found (no NVIDIA driver)"


def env_command() -> None:
    """Print the Python, package versions, C++ compiler and GPU that Ember sees."""
    rows = collect_env()
    width = max(len(name) for name, _ in rows) + 2
    for name, value in rows:
        typer.echo(f"{name:<{width}}{value}")
