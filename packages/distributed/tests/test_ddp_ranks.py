"""DDP on 2 ranks equals one process training on the global batch; no_sync, unused parameters and
the float16 compression hook (tests/ranks/ddp.py checks inside the ranks)."""

import pytest

pytest.importorskip("mpi4py", reason="the MPI backend needs mpi4py")


def test_ddp_equals_one_process(jobs):
    out = jobs.check(jobs.launch("ddp.py", 2))
    assert out.count("DDP checked") == 2
