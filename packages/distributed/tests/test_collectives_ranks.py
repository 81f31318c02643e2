"""Every collective on 2 and 4 ranks started by the launcher, each checked inside the ranks
against the same math done in one process with NumPy (tests/ranks/collectives.py)."""

import pytest

pytest.importorskip("mpi4py", reason="the MPI backend needs mpi4py")


@pytest.mark.parametrize(("nproc", "backend"), [(2, "cpu:mpi"), (4, "mpi")])
def test_every_collective(jobs, nproc, backend):
    out = jobs.check(jobs.launch("collectives.py", nproc, backend))
    for rank in range(nproc):
        assert f"rank {rank}: all collectives checked" in out
