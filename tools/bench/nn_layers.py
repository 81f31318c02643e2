"""Forward+backward of a conv2d layer and of linear layers against PyTorch, measured interleaved.

    python tools/bench/nn_layers.py [--rounds R]

The conv2d case is N=16, 32 -> 64 channels, 32x32, 3x3 kernel, padding 1 (with bias); it is also
timed as forward alone and backward alone. The linear cases are ``addmm(b, x, w)`` at a small and a
large size. Each case runs Ember and PyTorch alternately for R rounds and keeps the best round of
each; the ratio is Ember's time over PyTorch's (below 1 is faster).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ember

try:
    import torch
except ImportError:
    raise SystemExit("tools/bench/nn_layers.py needs PyTorch installed (pip install torch==2.13.0)") from None


def _tensor(lib, array: np.ndarray, requires_grad: bool = False):
    t = lib.from_numpy(array.copy())
    return t.requires_grad_(True) if requires_grad else t


def conv_cases(lib) -> dict:
    rng = np.random.default_rng(0)
    x = _tensor(lib, rng.standard_normal((16, 32, 32, 32), dtype=np.float32), True)
    w = _tensor(lib, rng.standard_normal((64, 32, 3, 3), dtype=np.float32) * 0.05, True)
    b = _tensor(lib, rng.standard_normal(64, dtype=np.float32), True)
    grad = _tensor(lib, rng.standard_normal((16, 64, 32, 32), dtype=np.float32))
    conv = lib.ops.aten.convolution

    def forward():
        return conv(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)

    def step():
        lib.autograd.grad(forward(), (x, w, b), grad)

    out = forward()

    def backward():
        lib.autograd.grad(out, (x, w, b), grad, retain_graph=True)

    def forward_no_grad():
        with lib.no_grad():
            return forward()

    return {
        "conv2d 16x32x32x32 k3 fwd+bwd": step,
        "conv2d forward (no grad)": forward_no_grad,
        "conv2d backward": backward,
    }


def linear_cases(lib) -> dict:
    cases = {}
    for batch, n_in, n_out in ((64, 128, 128), (512, 1024, 1024)):
        rng = np.random.default_rng(1)
        x = _tensor(lib, rng.standard_normal((batch, n_in), dtype=np.float32), True)
        # The weight is kept as (in, out), the transpose of nn.Linear's, so that the case is one addmm.
        w = _tensor(lib, rng.standard_normal((n_in, n_out), dtype=np.float32) * 0.05, True)
        b = _tensor(lib, rng.standard_normal(n_out, dtype=np.float32), True)
        grad = _tensor(lib, rng.standard_normal((batch, n_out), dtype=np.float32))

        def step(x=x, w=w, b=b, grad=grad):
            lib.autograd.grad(lib.addmm(b, x, w), (x, w, b), grad)

        cases[f"linear {batch}x{n_in} -> {n_out} fwd+bwd"] = step
    return cases


def _best(fn, repeat: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ours = {**conv_cases(ember), **linear_cases(ember)}
    theirs = {**conv_cases(torch), **linear_cases(torch)}
    print(f"{'case':40s} {'ember ms':>10s} {'torch ms':>10s} {'ratio':>7s}")
    for name, fn in ours.items():
        repeat = 3 if "conv" in name else 20
        e = t = float("inf")
        for _ in range(args.rounds):
            e = min(e, _best(fn, repeat))
            t = min(t, _best(theirs[name], repeat))
        print(f"{name:40s} {e * 1e3:10.2f} {t * 1e3:10.2f} {e / t:7.2f}")


if __name__ == "__main__":
    main()
