"""Optimizer steps against PyTorch, measured interleaved in one run.

    python tools/bench/optim.py [--rounds R] [--quick] [--torch-threads T]

One step of SGD (momentum), Adam and AdamW over a list of 100 parameters of mixed sizes (biases
of 64 and weights of 64x64, the shape of a small model), each on the per-tensor path and on the
multi-tensor (foreach) path. Gradients are set once and every step reads them. Each case runs
Ember and PyTorch alternately for R rounds and keeps the best round of each. The ratio is Ember's
time over PyTorch's: below 1 is faster. Then the foreach speed-up within each library.

On a shared machine PyTorch's intra-op threads can spin against other work and inflate its times;
``--torch-threads 1`` compares one thread with one thread (Ember's kernels here are single-threaded).
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

import ember

try:
    import torch
except ImportError:
    raise SystemExit("tools/bench/optim.py needs PyTorch installed (pip install torch==2.13.0)") from None

N_PARAMS = 100
OPTIMIZERS = [("SGD", dict(lr=0.01, momentum=0.9)), ("Adam", dict(lr=1e-3)), ("AdamW", dict(lr=1e-3))]


def _params(lib):
    rng = np.random.default_rng(0)
    shapes = [(64,) if i % 2 else (64, 64) for i in range(N_PARAMS)]
    params = []
    for shape in shapes:
        p = lib.nn.Parameter(lib.from_numpy(rng.standard_normal(shape).astype(np.float32)))
        p.grad = lib.from_numpy(rng.standard_normal(shape).astype(np.float32))
        params.append(p)
    return params


def cases(lib) -> dict:
    out = {}
    for name, kwargs in OPTIMIZERS:
        for foreach in (False, True):
            opt = getattr(lib.optim, name)(_params(lib), foreach=foreach, **kwargs)
            out[f"{name}, {'foreach' if foreach else 'loop'}"] = opt.step
    return out


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--torch-threads", type=int, default=None, help="torch.set_num_threads before timing")
    args = parser.parse_args()
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    number = 3 if args.quick else 20
    print(f"ember {ember.__version__}, torch {torch.__version__}, torch threads {torch.get_num_threads()}")
    print(f"one step over {N_PARAMS} parameters (50 of 64x64, 50 of 64)")
    ours, theirs = cases(ember), cases(torch)
    print(f"{'case':<20}{'ember':>12}{'pytorch':>12}{'ratio':>8}")
    times = {}
    for name in theirs:
        ours[name]()
        theirs[name]()
        best_ours = best_theirs = float("inf")
        for _ in range(args.rounds):
            best_ours = min(best_ours, timeit.timeit(ours[name], number=number) / number)
            best_theirs = min(best_theirs, timeit.timeit(theirs[name], number=number) / number)
        times[name] = (best_ours, best_theirs)
        print(f"{name:<20}{_fmt(best_ours):>12}{_fmt(best_theirs):>12}{best_ours / best_theirs:>7.2f}x")
    print("\nforeach speed-up (loop time / foreach time)")
    for name, _ in OPTIMIZERS:
        loop, fused = times[f"{name}, loop"], times[f"{name}, foreach"]
        print(f"{name:<20}ember {loop[0] / fused[0]:.2f}x, pytorch {loop[1] / fused[1]:.2f}x")


if __name__ == "__main__":
    main()
