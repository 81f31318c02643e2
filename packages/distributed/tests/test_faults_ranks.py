"""Faults on several ranks: a rank that hangs (the timeout fires on the others, naming it, and the
Flight Recorder analysis names it and where it was) and a rank that runs another collective than
the others. The 4-rank and skip variants take longer and run in the nox ``distributed`` session
(``EMBER_DISTRIBUTED_LONG=1``)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py", reason="the MPI backend needs mpi4py")

long_only = pytest.mark.skipif(
    not os.environ.get("EMBER_DISTRIBUTED_LONG"), reason="long fault test: run `nox -s distributed`"
)


def _analyze(directory) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ember", "fr", "analyze", str(directory)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def _hang(jobs, tmp_path, nproc, culprit):
    result = jobs.launch("faults.py", nproc, "hang", str(culprit), env={"EMBER_FR_DUMP_DIR": str(tmp_path)}, timeout=90)
    assert result.returncode == 1, result.stderr
    assert "DistBackendError" in result.stderr
    assert "collective all_reduce (sequence number 3) of process group 1 (short_timeout" in result.stderr
    assert f"ranks that never entered it: [{culprit}]" in result.stderr
    assert "did not finish within the group's timeout of 3 s" in result.stderr
    assert sorted(p.name for p in tmp_path.glob("rank_*.json")) == [f"rank_{r}.json" for r in range(nproc)]
    report = _analyze(tmp_path)
    assert report.returncode == 1, report.stdout + report.stderr
    assert f"CULPRIT: rank(s) [{culprit}] never entered all_reduce #3 of group 1" in report.stdout
    assert "faults.py:26" in report.stdout  # the culprit's time.sleep


def test_a_hanging_rank_times_out_the_others_and_is_named(jobs, tmp_path):
    _hang(jobs, tmp_path, 2, 1)


@long_only
def test_a_hanging_rank_of_four(jobs, tmp_path):
    _hang(jobs, tmp_path, 4, 2)


@long_only
def test_a_rank_that_skips_a_collective(jobs, tmp_path):
    result = jobs.launch("faults.py", 2, "skip", "1", env={"EMBER_FR_DUMP_DIR": str(tmp_path)}, timeout=90)
    assert result.returncode == 1
    report = _analyze(tmp_path)
    assert "CULPRIT: the ranks disagree on collective #3 of group 1" in report.stdout
    assert "rank(s) [1]: barrier" in report.stdout and "rank(s) [0]: all_reduce sizes=[[8]]" in report.stdout
