"""Every way the project is checked. ``nox -l`` lists the sessions; CI runs ``nox -s ci``."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["ci"]

PYTHONS = ["3.11", "3.12", "3.13"]
# In DESIGN.md's order; installed together so that pip resolves the siblings from this tree.
PACKAGES = [
    "packages/logging",
    "packages/tensor",
    "packages/autograd",
    "packages/sdpa",
    "packages/nn",
    "packages/fx",
    "packages/dynamo",
    "packages/inductor",
    "packages/distributed",
    "packages/ember",
]
TEST_DEPS = ["pytest>=8", "hypothesis>=6.100", "pybind11>=2.12"]  # pybind11: a test rebuilds a kernel for other targets
LINT_DEPS = ["ruff>=0.6"]
TEST_PATHS = [f"{p}/tests" for p in PACKAGES]
# The op tests (every op against the oracle, gradients, vmap, layers), run again by `portable`.
PORTABLE_TEST_PATHS = ["packages/tensor/tests", "packages/autograd/tests", "packages/nn/tests"]
# The oracle for tests: PyTorch's CPU build. Only Python 3.11 gets it from this machine's disk
# (elsewhere pip would fetch a multi-GB CUDA build), so oracle tests skip where it is absent.
ORACLE = "torch==2.13.0"
ORACLE_PYTHON = "3.11"
TRITON = "triton"
# The Triton kernels' tests: they skip in the plain sessions, which have no Triton.
TRITON_TESTS = [
    "packages/sdpa/tests/test_flash_triton.py",
    "packages/sdpa/tests/test_triton_philox.py",
    "packages/inductor/tests/test_triton_codegen.py",
]


def _find_pyenv_interpreters() -> None:
    """Put every pyenv Python on PATH: pyenv's shims only answer for the versions selected."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if not versions.is_dir():
        return
    newest: dict[str, tuple[tuple[int, ...], Path]] = {}
    for path in versions.iterdir():
        match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", path.name)
        if match and (path / "bin").is_dir():
            key = f"{match[1]}.{match[2]}"
            parsed = tuple(int(x) for x in match.groups())
            if key not in newest or parsed > newest[key][0]:
                newest[key] = (parsed, path / "bin")
    extra = [str(newest[v][1]) for v in PYTHONS if v in newest]
    os.environ["PATH"] = os.pathsep.join([*extra, os.environ.get("PATH", "")])


_find_pyenv_interpreters()


def install_ember(session: nox.Session) -> None:
    session.install(*[arg for package in PACKAGES for arg in ("-e", package)])


def install_test_deps(session: nox.Session) -> None:
    session.install(*TEST_DEPS)
    if session.python == ORACLE_PYTHON:
        session.install(ORACLE)


def run_lint(session: nox.Session) -> None:
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


def run_layering(session: nox.Session) -> None:
    session.run("python", "tools/layering.py")
    session.run("pytest", "tools/tests", "-q")


def run_tests(session: nox.Session) -> None:
    session.run("pytest", *TEST_PATHS, *session.posargs)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The packages' tests on one Python (with the PyTorch oracle on 3.11)."""
    install_ember(session)
    install_test_deps(session)
    run_tests(session)


@nox.session(python=ORACLE_PYTHON)
def slow(session: nox.Session) -> None:
    """The tests marked slow (tens of seconds each), which every other session skips."""
    install_ember(session)
    install_test_deps(session)
    session.run("pytest", *TEST_PATHS, "-m", "slow", *session.posargs, env={"EMBER_SLOW_TESTS": "1"})


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install(*LINT_DEPS)
    run_lint(session)


@nox.session(python="3.11")
def layering(session: nox.Session) -> None:
    """No package imports one to its right in DESIGN.md's order."""
    session.install(*TEST_DEPS)
    run_layering(session)


@nox.session(python="3.11")
def demo(session: nox.Session) -> None:
    """The main job: what Ember can do today."""
    install_ember(session)
    session.run("ember", "env")
    session.run("python", "demo/tensors_demo.py")
    session.run("python", "demo/logs_demo.py")
    session.run("python", "demo/gpt_demo.py")
    session.run("python", "demo/compile_demo.py")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Benchmarks side by side with their baselines; prints ratios, asserts nothing."""
    install_ember(session)
    session.install(ORACLE)
    session.run("python", "tools/bench/logs.py")
    session.run("python", "tools/bench/eager.py")
    session.run("python", "tools/bench/store.py")
    session.run("python", "tools/bench/optim.py")
    session.run("python", "tools/bench/autograd.py")
    session.run("python", "tools/bench/train.py")
    session.run("python", "tools/bench/collectives.py")
    session.run("python", "tools/bench/ddp.py")
    session.run("python", "tools/bench/dynamo.py")
    session.run("python", "tools/bench/dynamo_guards.py")
    session.run("python", "tools/bench/inductor.py")


@nox.session(python="3.11")
def distributed(session: nox.Session) -> None:
    """ember.distributed's tests on 2 and 4 MPI ranks, the long fault tests (a hanging rank of four,
    a rank that skips a collective) included; the default runs leave those out."""
    install_ember(session)
    install_test_deps(session)
    session.run("pytest", "packages/distributed/tests", "-q", *session.posargs, env={"EMBER_DISTRIBUTED_LONG": "1"})


# What the `portable` session switches off, computed in its environment: NumPy's dispatch targets
# that use AVX-512 (on a machine that has them), PyTorch's AVX-512 kernels and OpenBLAS's.
_AVX512_SETTINGS = """
import numpy._core._multiarray_umath as m
targets = [t for t in m.__cpu_dispatch__ if ("512" in t or t == "X86_V4") and m.__cpu_features__.get(t)]
print(" ".join(targets))
"""


def portable_env(session: nox.Session) -> dict[str, str]:
    targets = session.run("python", "-c", _AVX512_SETTINGS, silent=True).strip()
    if not targets:
        session.log("this CPU has no AVX-512: the portable run is the plain one")
        return {}
    session.log(f"NumPy's {targets}, PyTorch's and OpenBLAS's AVX-512 kernels switched off")
    return {"NPY_DISABLE_CPU_FEATURES": targets, "ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}


def run_portable(session: nox.Session) -> None:
    session.run("pytest", *PORTABLE_TEST_PATHS, "-q", *session.posargs, env=portable_env(session))


@nox.session(python=ORACLE_PYTHON)
def portable(session: nox.Session) -> None:
    """The op tests with AVX-512 switched off in NumPy, PyTorch and OpenBLAS, as on an AVX2 machine:
    results must not depend on the machine's vector width."""
    install_ember(session)
    install_test_deps(session)
    run_portable(session)


def run_triton_tests(session: nox.Session, env: dict[str, str]) -> None:
    install_ember(session)
    install_test_deps(session)
    session.install(TRITON)
    session.run("pytest", *TRITON_TESTS, *session.posargs, env=env)


@nox.session(python=ORACLE_PYTHON)
def triton_interpret(session: nox.Session) -> None:
    """The Triton kernels on the CPU, through Triton's interpreter (no GPU needed)."""
    run_triton_tests(session, {"TRITON_INTERPRET": "1"})


@nox.session(python=ORACLE_PYTHON)
def cuda(session: nox.Session) -> None:
    """The Triton kernels compiled for the GPU; skips on machines without one."""
    if shutil.which("nvidia-smi") is None:
        session.skip("no NVIDIA GPU here (nvidia-smi not found); run `nox -s triton_interpret` for the CPU")
    run_triton_tests(session, {"TRITON_INTERPRET": "0"})


@nox.session(python="3.11")
def ci(session: nox.Session) -> None:
    """What CI runs: lint, layering, the tests on 3.11 and the portable run, in one environment."""
    install_ember(session)
    install_test_deps(session)
    session.install(*LINT_DEPS)
    run_lint(session)
    run_layering(session)
    run_tests(session)
    run_portable(session)
