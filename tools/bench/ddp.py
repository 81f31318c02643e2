"""Milliseconds per DDP training step of the small GPT: Ember's DDP (MPI) against PyTorch's DDP over gloo.

    python tools/bench/ddp.py [--nproc 4] [--batch 4] [--steps 5] [--rounds 3] [--phases 2]

The model is the GPT of tools/bench/train.py (4 layers, width 128, context 64); each rank trains on
its own batch of ``--batch`` sequences (global batch nproc x batch). One step is forward, loss,
backward (DDP's gradient buckets all-reduced as backward produces them) and an AdamW update. Both
libraries start from the same weights (PyTorch's, seed 0, copied) and see the same batches. Each job
first times the same step without DDP, every rank busy alike: it tells DDP's own cost (the DDP
step over the plain one) from the library's eager speed.

Both run under the same launcher (``python -m ember.distributed.run``), each job its own set of
ranks, phases alternating Ember and PyTorch. In a job, after two warm-up steps, each of R rounds
times N steps; a round's time is its slowest rank's mean step, and the best round of every job of a
library counts. The ratio is PyTorch's time over Ember's (above 1 means Ember is faster). The
spread (worst round over best) says how noisy the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _worker(library: str, batch: int, steps: int, rounds: int) -> None:
    import torch

    sys.path.insert(0, str(Path(__file__).parents[2] / "packages" / "nn" / "tests"))
    from training_models import copy_state, gpt, gpt_batch

    torch.manual_seed(0)
    reference = gpt(torch)
    if library == "ember":
        import ember as lib
        import ember.distributed as dist

        dist.init_process_group()
        model = gpt(lib)
        copy_state(reference, model, lib)
    else:
        lib = torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        model = reference
    del reference
    rank = dist.get_rank()
    x, y = gpt_batch(np.random.default_rng(rank), batch=batch)
    x, y = lib.tensor(x), lib.tensor(y)
    # The same step without DDP first (DDP's hooks would fire on a plain backward once it wraps the
    # model): what each rank's compute costs on this machine with every rank busy, so that the
    # table tells DDP's own cost from the library's eager speed.
    plain = _times(dist, lib, _stepper(lib, model, x, y), steps, rounds)
    ddp = lib.nn.parallel.DistributedDataParallel(model)
    times = {"plain": plain, "ddp": _times(dist, lib, _stepper(lib, ddp, x, y), steps, rounds)}
    if rank == 0:
        print("RESULTS " + json.dumps(times), flush=True)
    dist.destroy_process_group()


def _stepper(lib, model, x, y):
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> None:
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def _times(dist, lib, step, steps: int, rounds: int) -> list[float]:
    """Seconds per step of each round, the slowest rank's, after two warm-up steps."""
    step()
    step()
    times = []
    for _ in range(rounds):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        slowest = lib.tensor([(time.perf_counter() - start) / steps], dtype=lib.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        times.append(slowest.item())
    return times


def _job(library: str, args: argparse.Namespace) -> dict[str, list[float]]:
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(args.nproc), __file__,
               "--worker", library, "--batch", str(args.batch), "--steps", str(args.steps),
               "--rounds", str(args.rounds)]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCH_CPP_LOG_LEVEL="ERROR")
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"the {library} job failed:\n{out.stdout}\n{out.stderr}")
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULTS "))
    return json.loads(line.removeprefix("RESULTS "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4, help="sequences per rank")
    parser.add_argument("--steps", type=int, default=5, help="steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per job")
    parser.add_argument("--phases", type=int, default=2, help="jobs of each library")
    parser.add_argument("--worker", choices=["ember", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.batch, args.steps, args.rounds)
        return
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.phases):
        for library in ("ember", "torch"):
            for kind, rounds in _job(library, args).items():
                times.setdefault((library, kind), []).extend(rounds)
    print(f"GPT 4x128, ctx 64, {args.nproc} ranks x batch {args.batch}, ms per step (best of "
          f"{args.phases * args.rounds} rounds of {args.steps} steps; spread: worst round / best)")  # fmt: skip
    print("| step | Ember | PyTorch | ratio | spread Ember / PyTorch |\n|---|---|---|---|---|")
    for kind, name in (("ddp", "DDP (MPI / gloo)"), ("plain", "same step without DDP")):
        ours, theirs = times[("ember", kind)], times[("torch", kind)]
        spread = f"{max(ours) / min(ours):.2f} / {max(theirs) / min(theirs):.2f}"
        ratio = min(theirs) / min(ours)
        print(f"| {name} | {min(ours) * 1e3:.1f} | {min(theirs) * 1e3:.1f} | {ratio:.2f} | {spread} |")
    for library, name in (("ember", "Ember"), ("torch", "PyTorch")):
        cost = min(times[(library, "ddp")]) / min(times[(library, "plain")])
        print(f"{name}: a DDP step takes {cost:.2f}x the step without DDP")


if __name__ == "__main__":
    main()
