"""Attention speed against PyTorch's scaled_dot_product_attention, measured interleaved in one run.

    python tools/bench/attention.py [--quick] [--sizes S ...] [--rounds R] [--device cpu|cuda]

On the CPU: Ember's FlashAttention-2 kernel (``ember.sdpa.kernels.flash_cpu``) called on NumPy
arrays, and Ember's front end ``ember.nn.functional.scaled_dot_product_attention`` on tensors (backend
choice, the dispatcher op, autograd), against ``torch.nn.functional.scaled_dot_product_attention`` on
float32 (B=4, H=8, D=64), causal and not, forward and forward+backward, for S from 256 to 4096. FLOPs are 4·B·H·S²·D, halved when causal,
times 2.5 for forward+backward (the backward's five products on top of the forward's two).
Each case runs both sides alternately for R rounds and keeps each one's best time; the ratio is
PyTorch's time over the front end's, so above 1 means we are faster. PyTorch's kernels run on
OpenMP, Ember's on its own threads; run alternately in one process, OpenMP's idle workers spin on
the cores Ember's threads need next, which costs Ember (most at small S). So the CPU run sets
``OMP_WAIT_POLICY=PASSIVE`` unless ``--omp-wait-policy`` says otherwise. ``--device cuda`` hands
over to the sibling module ``attention_cuda`` (the Triton kernel against PyTorch on the GPU).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

B, H, D = 4, 8, 64
SIZES = [256, 512, 1024, 2048, 4096]
QUICK_SIZES = [256, 1024]


def flops(s: int, causal: bool, backward: bool) -> float:
    total = 4.0 * B * H * s * s * D
    total *= 0.5 if causal else 1.0
    return total * (2.5 if backward else 1.0)


def best_of(fns: list[Callable[[], object]], rounds: int) -> list[float]:
    """Best wall time of each function over ``rounds`` interleaved rounds."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for n, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[n] = min(best[n], time.perf_counter() - start)
    return best


def cpu_cases(s: int, causal: bool):
    import torch

    from ember.sdpa.kernels import flash_cpu

    rng = np.random.default_rng(0)
    q, k, v, go = (rng.standard_normal((B, H, s, D), dtype=np.float32) for _ in range(4))
    out, lse = np.empty_like(q), np.empty((B, H, s), np.float32)
    gq, gk, gv = np.empty_like(q), np.empty_like(k), np.empty_like(v)

    def ours_forward():
        flash_cpu.forward(q, k, v, out, lse, is_causal=causal)

    def ours_training():
        flash_cpu.forward(q, k, v, out, lse, is_causal=causal)
        flash_cpu.backward(go, q, k, v, out, lse, gq, gk, gv, is_causal=causal)

    tq, tk, tv, tgo = (torch.from_numpy(a) for a in (q, k, v, go))
    lq, lk, lv = (t.clone().requires_grad_(True) for t in (tq, tk, tv))
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def torch_forward():
        with torch.no_grad():
            sdpa(tq, tk, tv, is_causal=causal)

    def torch_training():
        sdpa(lq, lk, lv, is_causal=causal).backward(tgo)

    import ember
    import ember.nn.functional as F

    eq, ek, ev, ego = (ember.tensor(a) for a in (q, k, v, go))
    gq_, gk_, gv_ = (t.clone().requires_grad_(True) for t in (eq, ek, ev))

    def front_forward():
        with ember.no_grad():
            F.scaled_dot_product_attention(eq, ek, ev, is_causal=causal)

    def front_training():
        F.scaled_dot_product_attention(gq_, gk_, gv_, is_causal=causal).backward(ego)

    return (ours_forward, front_forward, torch_forward), (ours_training, front_training, torch_training)


def run_cpu(args: argparse.Namespace) -> None:
    try:
        import torch
    except ImportError:
        raise SystemExit("tools/bench/attention.py needs PyTorch (pip install torch==2.13.0)") from None
    from ember.core import threads

    print(
        f"CPU attention, float32, B={B} H={H} D={D}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '')}, "
        f"ember threads {threads.get_num_threads()}, "
        f"pytorch threads {torch.get_num_threads()}; TFLOP/s of the kernel, the front end and PyTorch's SDPA; "
        "ratio = front end / pytorch (above 1: faster)"
    )
    print(f"{'S':>6} {'causal':>7} {'pass':>9} {'kernel':>8} {'front':>8} {'pytorch':>8} {'ratio':>7}")
    for s in args.sizes or (QUICK_SIZES if args.quick else SIZES):
        for causal in (False, True):
            for name, pair in zip(("forward", "fwd+bwd"), cpu_cases(s, causal), strict=True):
                rounds = args.rounds if s <= 1024 else max(2, args.rounds // 2)
                kernel, front, theirs = best_of(list(pair), rounds)
                work = flops(s, causal, name == "fwd+bwd") / 1e12
                print(
                    f"{s:>6} {causal!s:>7} {name:>9} {work / kernel:>8.3f} {work / front:>8.3f} {work / theirs:>8.3f} "
                    f"{theirs / front:>7.2f}"
                )


def run_cuda(args: argparse.Namespace) -> None:
    path = Path(__file__).with_name("attention_cuda.py")
    if not path.exists():
        print(f"the GPU path is absent: {path.name} is not in {path.parent}")
        return
    spec = importlib.util.spec_from_file_location("attention_cuda", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["attention_cuda"] = module
    spec.loader.exec_module(module)
    module.run(args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"only S in {QUICK_SIZES}")
    parser.add_argument("--sizes", type=int, nargs="+", help=f"sequence lengths (default {SIZES})")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per case; the best one counts")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--omp-wait-policy",
        choices=("PASSIVE", "ACTIVE", "inherit"),
        default="PASSIVE",
        help="OMP_WAIT_POLICY for PyTorch's OpenMP runtime (inherit: leave the environment's)",
    )
    args = parser.parse_args()
    if args.omp_wait_policy != "inherit":
        if "torch" in sys.modules or "ember" in sys.modules:
            raise SystemExit("--omp-wait-policy must be set before PyTorch and Ember are imported")
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy
    (run_cuda if args.device == "cuda" else run_cpu)(args)


if __name__ == "__main__":
    main()
