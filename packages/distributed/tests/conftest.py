import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from ember.distributed import HashStore, PrefixStore, Store, TCPStore

# Short enough that a hang fails fast, long enough for a loaded CI machine to answer.
TIMEOUT = timedelta(seconds=10)
KINDS = ["tcp", "hash", "prefix-tcp", "prefix-hash"]


@pytest.fixture
def master() -> TCPStore:
    return TCPStore("127.0.0.1", 0, is_master=True, timeout=TIMEOUT)


@pytest.fixture
def eventually():
    """Wait for a state another thread or process reaches; fail, never hang, if it does not."""

    def wait(condition, what: str, seconds: float = 10.0) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"never happened: {what}")
            time.sleep(0.005)

    return wait


@pytest.fixture
def connect(master):
    """A factory of worker clients of the master's server."""

    def make(**kwargs) -> TCPStore:
        kwargs.setdefault("timeout", TIMEOUT)
        return TCPStore("127.0.0.1", master.port, **kwargs)

    return make


def _pair(kind: str, port: int) -> tuple[Store, Store]:
    """Two handles on the same data: two clients of one server, or one in-process store twice."""
    if kind.endswith("tcp"):
        first, second = (TCPStore("127.0.0.1", port, timeout=TIMEOUT) for _ in range(2))
    else:
        first = second = HashStore(TIMEOUT)
    if kind.startswith("prefix"):
        return PrefixStore("job", first), PrefixStore("job", second)
    return first, second


@pytest.fixture(params=KINDS)
def store(request, master) -> Store:
    """Every store kind, for the semantics they share."""
    return _pair(request.param, master.port)[0]


@pytest.fixture(params=KINDS)
def pair(request, master) -> tuple[Store, Store]:
    return _pair(request.param, master.port)


# -- jobs of several ranks, started through the launcher as a user would ---------------------------

RANKS = Path(__file__).parent / "ranks"


def _launch(script: str, nproc: int, *args: str, timeout: float = 120, env: dict[str, str] | None = None,
           launcher_args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:  # fmt: skip
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc), *launcher_args,
               str(RANKS / script), *args]  # fmt: skip
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=full_env)


def _check(result: subprocess.CompletedProcess) -> str:
    if result.returncode != 0:
        raise AssertionError(f"the job failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


class Jobs:
    launch = staticmethod(_launch)
    check = staticmethod(_check)
    ranks = RANKS


@pytest.fixture
def jobs() -> Jobs:
    """``jobs.launch(script, nproc, *args)`` runs ``tests/ranks/script`` on ``nproc`` ranks;
    ``jobs.check(result)`` fails with the job's output unless it succeeded."""
    return Jobs()
