"""Autograd speed against PyTorch, measured interleaved in one run.

    python tools/bench/autograd.py [--rounds R] [--quick]

Two things: the cost of recording (the same small op on a tensor that requires grad and on one that
does not: the difference is what recording a node costs), and forward+backward of a 3-layer MLP
(tanh hidden layers, mean-squared loss) at a small width, where per-op overhead dominates, and a
large one, where kernels do. Each case runs Ember and PyTorch alternately for R rounds and keeps the
best round of each. The ratio is Ember's time over PyTorch's: below 1 is faster.
"""

from __future__ import annotations

import argparse
import time
import timeit

import numpy as np

import ember

try:
    import torch
except ImportError:
    raise SystemExit("tools/bench/autograd.py needs PyTorch installed (pip install torch==2.13.0)") from None


def _tensor(lib, array: np.ndarray, requires_grad: bool = False):
    t = lib.from_numpy(array.copy())
    return t.requires_grad_(True) if requires_grad else t


def recording_cases(lib) -> dict:
    rng = np.random.default_rng(0)
    plain = _tensor(lib, rng.standard_normal((8, 8), dtype=np.float32))
    other = _tensor(lib, rng.standard_normal((8, 8), dtype=np.float32))
    leaf = _tensor(lib, rng.standard_normal((8, 8), dtype=np.float32), requires_grad=True)
    inner = leaf * 1.0  # a non-leaf: recording on it needs no grad accumulator
    return {
        "mul 8x8, no grad": lambda: plain * other,
        "mul 8x8, non-leaf requiring grad": lambda: inner * other,
        "mul 8x8, leaf requiring grad": lambda: leaf * other,
        "sin 8x8, no grad": lambda: plain.sin(),
        "sin 8x8, non-leaf requiring grad": lambda: inner.sin(),
    }


def mlp_case(lib, batch: int, width: int):
    rng = np.random.default_rng(1)
    x = _tensor(lib, rng.standard_normal((batch, width), dtype=np.float32))
    target = _tensor(lib, rng.standard_normal((batch, width), dtype=np.float32))
    scale = 1.0 / np.sqrt(width)
    params = []
    for _ in range(3):
        params.append(_tensor(lib, rng.uniform(-scale, scale, (width, width)).astype(np.float32), True))
        params.append(_tensor(lib, rng.uniform(-scale, scale, (width,)).astype(np.float32), True))

    def step():
        h = x
        for i in range(3):
            h = h.mm(params[2 * i]) + params[2 * i + 1]
            if i < 2:
                h = h.tanh()
        loss = ((h - target) ** 2).mean()
        loss.backward()
        for p in params:
            p.grad = None

    return step


def train_case(lib, batch: int, width: int, classes: int):
    """One SGD step of a 2-layer classifier: linear, layer_norm, GELU, linear, cross_entropy, and the
    update written with in-place ops, as a hand-written training loop does it."""
    if lib is torch:
        F, gelu = torch.nn.functional, torch.nn.functional.gelu
    else:
        import ember.core.functional as F

        gelu = ember.ops.aten.gelu.default
    rng = np.random.default_rng(2)
    x = _tensor(lib, rng.standard_normal((batch, width), dtype=np.float32))
    labels = lib.from_numpy(rng.integers(0, classes, batch))
    scale = 1.0 / np.sqrt(width)
    w1 = _tensor(lib, rng.uniform(-scale, scale, (width, width)).astype(np.float32), True)
    b1 = _tensor(lib, np.zeros(width, np.float32), True)
    gamma = _tensor(lib, np.ones(width, np.float32), True)
    beta = _tensor(lib, np.zeros(width, np.float32), True)
    w2 = _tensor(lib, rng.uniform(-scale, scale, (classes, width)).astype(np.float32), True)
    b2 = _tensor(lib, np.zeros(classes, np.float32), True)
    params = (w1, b1, gamma, beta, w2, b2)

    def step():
        h = gelu(F.layer_norm(F.linear(x, w1, b1), (width,), gamma, beta))
        F.cross_entropy(F.linear(h, w2, b2), labels).backward()
        with lib.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-0.01)
                p.grad = None

    return step


def mlp_cases(lib) -> dict:
    return {
        "MLP fwd+bwd, batch 32, width 64": mlp_case(lib, 32, 64),
        "SGD step, LayerNorm+GELU, 32x64 -> 10": train_case(lib, 32, 64, 10),
        "MLP fwd+bwd, batch 256, width 1024": mlp_case(lib, 256, 1024),
    }


# Wall-clock time by default; --cpu-time counts only this process's CPU time (one PyTorch thread), which
# a machine shared with other jobs leaves far steadier.
_timer = timeit.default_timer


def run(title: str, make_cases, number: int, rounds: int) -> dict:
    ours, theirs = make_cases(ember), make_cases(torch)
    print(f"\n{title}")
    print(f"{'case':<42}{'ember':>12}{'pytorch':>12}{'ratio':>8}")
    times = {}
    for name in theirs:
        try:
            ours[name]()
        except (AttributeError, NotImplementedError, RuntimeError, TypeError) as error:
            print(f"{name:<42}{'absent':>12}{'':>12}{'':>8}  ({type(error).__name__}: {str(error)[:60]})")
            continue
        theirs[name]()
        best_ours = best_theirs = float("inf")
        for _ in range(rounds):
            best_ours = min(best_ours, timeit.timeit(ours[name], number=number, timer=_timer) / number)
            best_theirs = min(best_theirs, timeit.timeit(theirs[name], number=number, timer=_timer) / number)
        times[name] = (best_ours, best_theirs)
        print(f"{name:<42}{_fmt(best_ours):>12}{_fmt(best_theirs):>12}{best_ours / best_theirs:>7.2f}x")
    return times


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
    t = run("recording (per-op cost)", recording_cases, 20000 // scale, args.rounds)
    for op in ("mul", "sin"):
        key = f"{op} 8x8, non-leaf requiring grad"
        base = f"{op} 8x8, no grad"
        if key in t and base in t:
            ours = t[key][0] - t[base][0]
            theirs = t[key][1] - t[base][1]
            print(
                f"recording cost of {op}: ember {ours * 1e6:.2f} us, pytorch {theirs * 1e6:.2f} us, {ours / theirs:.2f}x"
            )
    run("3-layer MLP, forward and backward", mlp_cases, max(1, 50 // scale), args.rounds)


if __name__ == "__main__":
    main()
