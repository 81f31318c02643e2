"""vmap overhead against PyTorch's ``torch.func.vmap``, measured interleaved in one run.

    python tools/bench/vmap.py [--rounds R]

Cases: ``vmap(lambda x, y: x.sin() + y)`` over a batch of 64 small tensors (per-call overhead
dominates: entering vmap, wrapping, two batched ops, unwrapping), the same body unmapped on the
whole (64, 8) tensors (what the batched ops cost without vmap), a loop of 64 unmapped calls (what
vmap saves), and per-sample gradients ``vmap(grad(f))`` of a small loss. Each case runs Ember and
PyTorch alternately for R rounds and keeps the best round of each; the ratio is Ember's time over
PyTorch's (below 1 is faster).
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

import ember
import ember.func

try:
    import torch
except ImportError:
    raise SystemExit("tools/bench/vmap.py needs PyTorch installed (pip install torch==2.13.0)") from None


def cases(lib, vmap, grad) -> dict:
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 8), dtype=np.float32))
    y = lib.from_numpy(rng.standard_normal((8,), dtype=np.float32))
    w = lib.from_numpy(rng.standard_normal((8,), dtype=np.float32))

    def body(a, b):
        return a.sin() + b

    def loss(w, a):
        return ((a * w).tanh() - a).pow(2).sum()

    mapped = vmap(body, in_dims=(0, None))
    per_sample = vmap(grad(loss), in_dims=(None, 0))
    return {
        "vmap(x.sin() + y), batch 64 of (8,)": lambda: mapped(x, y),
        "unmapped x.sin() + y on (64, 8)": lambda: body(x, y),
        "loop of 64 calls on (8,)": lambda: [body(x[i], y) for i in range(64)],
        "vmap(grad(loss)), batch 64 of (8,)": lambda: per_sample(w, x),
    }


def best(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=1)) / number


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ours = cases(ember, ember.func.vmap, ember.func.grad)
    theirs = cases(torch, torch.func.vmap, torch.func.grad)
    print(f"{'case':44} {'ember us':>10} {'torch us':>10} {'ratio':>7}")
    for name in ours:
        number = 20 if "loop" in name or "grad" in name else 200
        e = t = float("inf")
        for _ in range(args.rounds):
            e = min(e, best(ours[name], number))
            t = min(t, best(theirs[name], number))
        print(f"{name:44} {e * 1e6:10.1f} {t * 1e6:10.1f} {e / t:7.2f}")


if __name__ == "__main__":
    main()
