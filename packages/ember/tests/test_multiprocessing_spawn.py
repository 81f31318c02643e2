"""``ember.multiprocessing.spawn``: every process runs, failures raise in the parent with the child's
traceback, exit code or signal, and the other processes are stopped."""

from __future__ import annotations

import operator
import os
import signal
import time

import pytest

import ember
import ember.multiprocessing as mp


def test_spawn_runs_each_index_with_the_spawn_start_method():
    assert mp.spawn(time.sleep, args=(), nprocs=2) is None  # sleep(0), sleep(1)


def test_a_raising_child_raises_with_its_traceback():
    with pytest.raises(mp.ProcessRaisedException, match="ZeroDivisionError") as info:
        mp.spawn(operator.truediv, args=(0,), nprocs=2)
    assert "-- Process" in str(info.value) and info.value.error_index in (0, 1)


def test_exit_codes_and_signals_are_named(tmp_path):
    def exits(i):
        os._exit(3 if i == 1 else 0)

    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with exit code 3") as info:
        mp.start_processes(exits, nprocs=2, start_method="fork")
    assert info.value.exit_code == 3

    def killed(i):
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(mp.ProcessExitedException, match="terminated with signal SIGKILL"):
        mp.start_processes(killed, nprocs=1, start_method="fork")


def test_a_failure_stops_the_other_processes(tmp_path):
    def work(i):
        if i == 0:
            raise ValueError("rank 0 failed")
        time.sleep(120)

    start = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException, match="rank 0 failed"):
        mp.start_processes(work, nprocs=2, start_method="fork")
    assert time.monotonic() - start < 60


def test_join_false_returns_a_context(tmp_path):
    def work(i, path):
        (path / f"{i}").write_text(str(ember.ones(2).sum().item()))

    ctx = mp.start_processes(work, args=(tmp_path,), nprocs=3, join=False, start_method="fork")
    assert len(ctx.pids()) == 3
    while not ctx.join(timeout=5):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0", "1", "2"]
    assert (tmp_path / "2").read_text() == "2.0"


def test_the_standard_module_is_there_and_sharing_strategies():
    assert mp.Queue is not None and mp.get_context("spawn") is not None
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    with pytest.raises(ValueError):
        mp.set_sharing_strategy("shared_tensors")
