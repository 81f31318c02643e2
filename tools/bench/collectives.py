"""Bus bandwidth of Ember's collectives (MPI) against PyTorch's gloo, 4 ranks on this machine, one run.

    python tools/bench/collectives.py [--nproc 4] [--sizes-kib 4 64 1024 16384 65536] [--rounds 2]

Both libraries run under the same launcher (``python -m ember.distributed.run``), each job its own
set of ranks, rounds alternating Ember and PyTorch. Each rank times all_reduce, all_gather
(``all_gather_into_tensor``) and reduce_scatter (``reduce_scatter_tensor``) of float32 tensors of
each size (the size of the full tensor: all_reduce's input, all_gather's output, reduce_scatter's
input): warm-up, a barrier, then as many repetitions as fit in about 0.3 s; the time of one is the
slowest rank's mean. Bus bandwidth as NCCL's tests define it: size x 2(n-1)/n / time for
all_reduce, size x (n-1)/n / time for the other two. Each case reports its best round; the ratio
is Ember/PyTorch (above 1 means Ember is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

OPS = ["all_reduce", "all_gather", "reduce_scatter"]


def _worker(library: str, sizes: list[int]) -> None:
    if library == "ember":
        import ember as lib
        import ember.distributed as dist

        dist.init_process_group()
        empty = lambda n: lib.zeros(n)  # noqa: E731
    else:
        import torch as lib
        import torch.distributed as dist

        dist.init_process_group("gloo")
        empty = lambda n: lib.zeros(n)  # noqa: E731
    rank, world = dist.get_rank(), dist.get_world_size()
    results = []
    for nbytes in sizes:
        n = nbytes // 4
        n -= n % world
        full, part = empty(n), empty(n // world)
        calls = {
            "all_reduce": lambda full=full: dist.all_reduce(full),
            "all_gather": lambda full=full, part=part: dist.all_gather_into_tensor(full, part),
            "reduce_scatter": lambda full=full, part=part: dist.reduce_scatter_tensor(part, full),
        }
        for op in OPS:
            call = calls[op]
            call()
            dist.barrier()
            start = time.perf_counter()
            call()
            once = time.perf_counter() - start
            reps = max(3, min(200, int(0.3 / max(once, 1e-6))))
            reps = _agree(dist, lib, reps, rank)
            dist.barrier()
            start = time.perf_counter()
            for _ in range(reps):
                call()
            mean = (time.perf_counter() - start) / reps
            slowest = lib.tensor([mean], dtype=lib.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            results.append({"op": op, "bytes": n * 4, "seconds": slowest.item()})
    if rank == 0:
        print("RESULTS " + json.dumps(results), flush=True)
    dist.destroy_process_group()


def _agree(dist, lib, reps: int, rank: int) -> int:
    value = lib.tensor([float(reps)], dtype=lib.float64)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return int(value.item())


def _job(library: str, nproc: int, sizes: list[int]) -> list[dict]:
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc), __file__,
               "--worker", library, "--sizes-bytes", *map(str, sizes)]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCH_CPP_LOG_LEVEL="ERROR")
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"the {library} job failed:\n{out.stdout}\n{out.stderr}")
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULTS "))
    return json.loads(line.removeprefix("RESULTS "))


def _busbw(op: str, nbytes: int, seconds: float, n: int) -> float:
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    return nbytes * factor / seconds / 1e9


def _size(nbytes: int) -> str:
    return f"{nbytes // 1024**2} MiB" if nbytes >= 1024**2 else f"{nbytes // 1024} KiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--sizes-kib", type=int, nargs="+", default=[4, 64, 1024, 4096, 16384, 65536])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", choices=["ember", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--sizes-bytes", type=int, nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.sizes_bytes)
        return
    sizes = [k * 1024 for k in args.sizes_kib]
    best: dict[tuple[str, str, int], float] = {}
    for _ in range(args.rounds):
        for library in ("ember", "torch"):
            for r in _job(library, args.nproc, sizes):
                key = (library, r["op"], r["bytes"])
                best[key] = min(best.get(key, float("inf")), r["seconds"])
    print(f"{args.nproc} ranks, float32, bus bandwidth in GB/s (best of {args.rounds} rounds)")
    print("| op | size | Ember (MPI) | PyTorch (gloo) | ratio |\n|---|---|---|---|---|")
    for op in OPS:
        for nbytes in sorted({b for (_, o, b) in best if o == op}):
            ours = _busbw(op, nbytes, best[("ember", op, nbytes)], args.nproc)
            theirs = _busbw(op, nbytes, best[("torch", op, nbytes)], args.nproc)
            print(f"| {op} | {_size(nbytes)} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
