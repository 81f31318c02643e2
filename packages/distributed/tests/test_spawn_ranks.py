"""A training script in the ``mp.spawn`` style: ``ember.multiprocessing.spawn`` starts the ranks,
each calls ``init_process_group`` from the environment (MASTER_ADDR/MASTER_PORT) and runs DDP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

SCRIPT = """
import os, sys
import ember
import ember.distributed as dist
import ember.multiprocessing as mp


def run(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(rank=rank, world_size=world)
    t = ember.ones(3) * (rank + 1)
    dist.all_reduce(t)
    ember.manual_seed(0)
    model = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(3, 1))
    model(ember.full((1, 3), float(rank))).sum().backward()
    grad = model.module.weight.grad
    if rank == 0:
        sys.stdout.write(f"{t.tolist()} {grad.tolist()}\\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_spawned_ranks_all_reduce_and_train_with_ddp(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), str(_free_port())],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stderr
    # all_reduce sums 1 and 2; DDP averages the ranks' gradients (inputs 0 and 1: mean 0.5 a weight)
    assert result.stdout.strip() == "[3.0, 3.0, 3.0] [[0.5, 0.5, 0.5]]"
