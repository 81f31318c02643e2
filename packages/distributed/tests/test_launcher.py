"""The launcher: torchrun's variables, a rank that fails stops the job within seconds with its
traceback, and nothing is left behind."""

import json
import os
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="the MPI backend needs mpi4py")


def _mpich_segments() -> set[str]:
    return {p.name for p in Path("/dev/shm").glob("mpich_*")} if Path("/dev/shm").is_dir() else set()


def test_environment_of_each_rank(jobs, tmp_path):
    before = _mpich_segments()
    result = jobs.launch("environment.py", 2, str(tmp_path), env={"EMBER_LOGS": "collectives"})
    out = jobs.check(result)
    seen = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]
    for r, env in enumerate(seen):
        assert env["RANK"] == str(r) and env["LOCAL_RANK"] == str(r)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "2"
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"].isdigit()
        assert env["TORCHELASTIC_RUN_ID"] and env["argv"] == ["environment.py", str(tmp_path)]
    assert seen[0]["MASTER_PORT"] == seen[1]["MASTER_PORT"]
    assert "ranks agree" in out
    for r in range(2):  # EMBER_LOGS=collectives: each collective, in each rank's prefixed records
        assert any(line.startswith(f"[rank{r}]:") and "[collectives] all_reduce group=0 seq=1 sizes=[[1]]" in line
                   for line in result.stderr.splitlines()), result.stderr  # fmt: skip
    assert _mpich_segments() <= before, "MPICH's shared memory was left in /dev/shm"


def test_a_failing_rank_stops_the_job_with_its_traceback(jobs):
    before = _mpich_segments()
    started = time.monotonic()
    result = jobs.launch("faults.py", 2, "raise", "1", timeout=60)
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < 30  # the waiting rank did not wait for its timeout
    assert "rank 1 (local rank 1" in result.stderr and "failed with exit code 1" in result.stderr
    assert "[rank1]: ValueError: rank 1 gives up" in result.stderr
    assert "faults.py" in result.stderr and "finished" not in result.stdout
    assert _mpich_segments() <= before


def test_bad_arguments():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2",
                             "--max-restarts", "3", "x.py"], capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2 and "restarting" in result.stderr


def test_module_and_cli_entry(jobs, tmp_path):
    import subprocess
    import sys

    script = tmp_path / "hello.py"
    # One write per rank: the ranks share the launcher's stdout, unbuffered, so print()'s separate
    # writes of its arguments could interleave.
    script.write_text("import os, sys\nsys.stdout.write(f\"hello {os.environ['RANK']} {sys.argv[1:]}\\n\")\n")
    ember = [sys.executable, "-m", "ember", "run", "--nproc-per-node", "2", str(script), "--flag", "1"]
    result = subprocess.run(ember, capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:2]) == ["hello 0 ['--flag', '1']", "hello 1 ['--flag', '1']"]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ranks_started_without_the_launcher(jobs):
    """Ranks started by hand (tcp://): each rank serves MPI's start-up from a helper process; rank
    0's helper serves their store, as rank 0's own store thread stops inside MPI_Init."""
    import subprocess
    import sys

    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, str(jobs.ranks / "tiny.py"), f"tcp://127.0.0.1:{port}", str(r), "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(
                os.environ,
                LOCAL_WORLD_SIZE="1",
                LOCAL_RANK="0",
            ),
        )
        for r in range(2)
    ]  # LOCAL_WORLD_SIZE=1: MPI takes them for two hosts and connects them over its network module
    outs = [p.communicate(timeout=90) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs, strict=True)):
        assert p.returncode == 0, err
        assert f"rank {r} of 2: ok" in out


@pytest.mark.skipif(not os.environ.get("EMBER_DISTRIBUTED_LONG"), reason="long: run `nox -s distributed`")
def test_two_nodes_of_two(jobs):
    import subprocess
    import sys

    port = str(_free_port())
    nodes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ember.distributed.run",
                "--nnodes",
                "2",
                "--node-rank",
                str(n),
                "--nproc-per-node",
                "2",
                "--master-port",
                port,
                str(jobs.ranks / "tiny.py"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in nodes]
    text = "".join(out for out, _ in outs)
    assert all(p.returncode == 0 for p in nodes), outs
    assert sorted(line for line in text.splitlines() if "ok" in line) == [f"rank {r} of 4: ok" for r in range(4)]
