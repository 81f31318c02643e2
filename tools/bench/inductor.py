"""Ember's code generator against PyTorch's ``torch.compile``, measured in the same run.

    python tools/bench/inductor.py [--rounds R] [--threads T]

Both libraries on the CPU, float32, T threads each (2 by default: ``OMP_NUM_THREADS`` is set before
either library loads, and ``torch.set_num_threads``). Cases: a pointwise chain over 4M elements,
softmax 1024x1024, layer norm 4096x1024 (with weight and bias), sum over 4M. Each function is
compiled by both (``backend="inductor"``), run once to compile, then timed: the median of R calls.
Reported: Ember's time, PyTorch's, their ratio (target: at most 1.0), and the cold compile of each
(first call less a warm call; Ember's kernels may come from its disk cache, say ``EMBER_CACHE_DIR``
to an empty folder for a truly cold start). A second table (``_inductor_models.py``) runs whole
models: a GPT block forward and forward+backward, a small CNN forward+backward, 50 small ops on 8x8
tensors, with compile, warm-start and Ember eager times. ``--only GPT,CNN`` picks cases by name.
Asserts nothing; the timings are only as quiet as the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--only", default="", help="run only the cases whose name contains one of these (comma-separated)"
    )
    parser.add_argument("--warm-start", default=None, help=argparse.SUPPRESS)  # internal: one warm-start run
    return parser.parse_args()


ARGS = _parse()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as EF  # noqa: E402

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    raise SystemExit("tools/bench/inductor.py needs PyTorch installed (pip install torch==2.13.0)") from None


def chain(lib):
    return lambda x: ((x * 1.5 + 0.25).sin() * x).exp().relu() - x / 3


def softmax(lib):
    return lambda x: lib.softmax(x, -1)


def layer_norm(lib):
    F = EF if lib is ember else TF
    return lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b)


def total(lib):
    return lambda x: x.sum()


CASES = {
    "pointwise chain 4M": (chain, [(4 * 1024 * 1024,)]),
    "softmax 1024x1024": (softmax, [(1024, 1024)]),
    "layer norm 4096x1024": (layer_norm, [(4096, 1024), (1024,), (1024,)]),
    "sum 4M": (total, [(4 * 1024 * 1024,)]),
}


def _time(fn, args, rounds: int) -> tuple[float, float]:
    """(cold compile seconds, median seconds per call)."""
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return max(first - median, 0.0), median


def main() -> None:
    torch.set_num_threads(ARGS.threads)
    print(f"threads: {ARGS.threads}, float32, median of {ARGS.rounds} calls", file=sys.stderr)
    print(f"{'case':<22} {'ember':>10} {'torch':>10} {'ratio':>6}   {'compile':>9} {'torch':>9} {'ratio':>6}")
    rng = np.random.default_rng(0)
    for name, (build, shapes) in CASES.items():
        if not any(part in name for part in ARGS.only.split(",")):
            continue
        arrays = [rng.standard_normal(s).astype("float32") for s in shapes]
        ours = ember.compile(build(ember), backend="inductor")
        theirs = torch.compile(build(torch), backend="inductor")
        with ember.no_grad():
            our_compile, our_time = _time(ours, [ember.tensor(a) for a in arrays], ARGS.rounds)
        with torch.no_grad():
            their_compile, their_time = _time(theirs, [torch.tensor(a) for a in arrays], ARGS.rounds)
        print(
            f"{name:<22} {our_time * 1e3:>7.2f} ms {their_time * 1e3:>7.2f} ms {our_time / their_time:>6.2f}   "
            f"{our_compile:>7.2f} s {their_compile:>7.2f} s {our_compile / max(their_compile, 1e-9):>6.2f}"
        )


if __name__ == "__main__":
    if ARGS.warm_start is not None:
        from _inductor_models import warm_start_main

        warm_start_main(ARGS)
    else:
        main()
        from _inductor_models import models_main

        models_main(ARGS)
