"""DDP on 2 ranks against PyTorch's DDP over gloo, started on the same ranks with the same weights
(and every check of test_ddp_ranks too)."""

import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
pytest.importorskip("mpi4py", reason="the MPI backend needs mpi4py")


def test_ddp_matches_pytorch_ddp_over_gloo(jobs):
    out = jobs.check(jobs.launch("ddp.py", 2, "--oracle", timeout=180))
    assert out.count("matches PyTorch DDP") == 2 and out.count("DDP checked") == 2
