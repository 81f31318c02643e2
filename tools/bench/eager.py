"""Eager speed against PyTorch, measured interleaved in one run.

    python tools/bench/eager.py [--rounds R] [--quick]

Small ops measure per-call overhead (the dispatcher, tensor creation); large ops measure kernels.
Each case runs Ember and PyTorch alternately for R rounds and keeps each one's best round, so that
noise on this machine hits both alike. The ratio is Ember's time over PyTorch's: below 1 is faster.
A case whose op Ember does not have yet prints as absent rather than being skipped silently.
"""

from __future__ import annotations

import argparse
import time
import timeit
from collections.abc import Callable

import numpy as np

import ember
import ember.core.functional

try:
    import torch
except ImportError:
    raise SystemExit("tools/bench/eager.py needs PyTorch installed (pip install torch==2.13.0)") from None


def small_cases(lib) -> dict[str, Callable[[], object]]:
    a, b = lib.ones(8, 8), lib.ones(8, 8)
    rng = np.random.default_rng(5)
    h = lib.from_numpy(rng.standard_normal((32, 64), dtype=np.float32))
    bias = lib.from_numpy(rng.standard_normal(64, dtype=np.float32))
    param, grad = lib.ones(64, 64), lib.ones(64, 64)
    rows = [lib.from_numpy(rng.standard_normal(32, dtype=np.float32)) for _ in range(64)]
    return {
        "add 8x8": lambda: a + b,
        "mul 8x8 by a scalar": lambda: a * 2.0,
        "sum 8x8": lambda: a.sum(),
        "view chain (view, view, t, unsqueeze)": lambda: a.view(64).view(8, 8).t().unsqueeze(0),
        "slicing a[1:3, ::2]": lambda: a[1:3, ::2],
        "int index h[5]": lambda: h[5],
        "bias add 32x64 + 64 (broadcast)": lambda: h + bias,
        "sum(0) 32x64": lambda: h.sum(0),
        "p.add_(g, alpha=-0.01) 64x64": lambda: param.add_(grad, alpha=-0.01),
        "stack 64 x [32]": lambda: lib.stack(rows),
        "cat 64 x [32]": lambda: lib.cat(rows),
    }


def large_cases(lib) -> dict[str, Callable[[], object]]:
    data = np.random.default_rng(0).standard_normal(4 * 1024 * 1024, dtype=np.float32)
    x = lib.from_numpy(data.copy())
    y = x.clone()
    square = lib.from_numpy(np.random.default_rng(1).standard_normal((1024, 1024), dtype=np.float32))
    rows = lib.from_numpy(np.random.default_rng(2).integers(0, 1024, 256))
    million = x[: 1024 * 1024]
    image = lib.from_numpy(np.random.default_rng(2).standard_normal((32, 64, 56, 56), dtype=np.float32))
    kernel = lib.from_numpy(np.random.default_rng(3).standard_normal((64, 64, 3, 3), dtype=np.float32))
    F = lib.nn.functional if lib is torch else ember.core.functional
    activations = lib.from_numpy(np.random.default_rng(2).standard_normal((64, 1024), dtype=np.float32))
    weight, bias = lib.ones(1024), lib.zeros(1024)
    logits = lib.from_numpy(np.random.default_rng(3).standard_normal((256, 1000), dtype=np.float32))
    classes = lib.from_numpy(np.random.default_rng(4).integers(0, 1000, 256))
    return {
        "add 4M floats": lambda: x + y,
        "exp 4M floats": lambda: x.exp(),
        "sum 4M floats": lambda: x.sum(),
        "softmax 1024x1024": lambda: square.softmax(-1),
        "log_softmax 1024x1024": lambda: F.log_softmax(square, -1),
        "layer_norm 64x1024 (weight, bias)": lambda: F.layer_norm(activations, (1024,), weight, bias),
        "cross_entropy 256x1000 (class indices)": lambda: F.cross_entropy(logits, classes),
        "matmul 1024x1024": lambda: square @ square,
        "sort 1024x1024 rows": lambda: square.sort(-1),
        "rand 4M floats": lambda: lib.rand(4 * 1024 * 1024),
        "dropout 4M floats": lambda: lib.dropout(x, 0.5, True),
        "advanced indexing x[idx], 256 rows": lambda: square[rows],
        "boolean mask x[x > 0] 1M": lambda: million[million > 0],
        "conv2d 32x64x56x56, 3x3, 64->64, padding 1": lambda: lib.conv2d(image, kernel, None, 1, 1),
    }


# Wall-clock time by default; --cpu-time counts only this process's CPU time (one PyTorch thread), which
# a machine shared with other jobs leaves far steadier.
_timer = timeit.default_timer


def measure(fn: Callable[[], object], number: int) -> float:
    return timeit.timeit(fn, number=number, timer=_timer) / number


def run(title: str, make_cases, number: int, rounds: int) -> None:
    ours, theirs = make_cases(ember), make_cases(torch)
    print(f"\n{title}")
    print(f"{'case':<40}{'ember':>12}{'pytorch':>12}{'ratio':>8}")
    for name in theirs:
        try:
            ours[name]()
        except (AttributeError, NotImplementedError, TypeError) as error:
            print(f"{name:<40}{'absent':>12}{'':>12}{'':>8}  ({type(error).__name__}: {str(error)[:60]})")
            continue
        best_ours = best_theirs = float("inf")
        for _ in range(rounds):
            best_ours = min(best_ours, measure(ours[name], number))
            best_theirs = min(best_theirs, measure(theirs[name], number))
        print(f"{name:<40}{_fmt(best_ours):>12}{_fmt(best_theirs):>12}{best_ours / best_theirs:>7.2f}x")


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.2f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--cpu-time", action="store_true", help="time CPU use, not wall time (one torch thread)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    if args.cpu_time:
        global _timer
        _timer = time.process_time
        torch.set_num_threads(1)
    print(f"ember {ember.__version__}, torch {torch.__version__}, torch threads {torch.get_num_threads()}")
    run("small ops (per-call overhead)", small_cases, 20000 // scale, args.rounds)
    run("large ops", large_cases, max(1, 20 // scale), args.rounds)


if __name__ == "__main__":
    main()
