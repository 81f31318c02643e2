"""FlexAttention speed and memory: Ember's eager ``flex_attention`` against PyTorch's, in one run.

    python tools/bench/flex_attention.py [--sizes S ...] [--rounds R] [--no-compile] [--eager-max S] [--backward]

CPU, float32, B=4 H=8 D=64. Three cases: ``causal`` (a BlockMask), ``sliding`` (causal with a
256-token window, a BlockMask) and ``softcap`` (a tanh soft-capping score_mod on top of a causal
BlockMask). Each is timed for Ember's eager flex_attention, PyTorch's eager flex_attention (which
materializes the scores; run up to ``--eager-max``) and PyTorch's ``torch.compile(flex_attention)``
(the CPU C++ template; compiled once per case, outside the timing). Sides run alternately for R
rounds, keeping each one's best time; ratios are PyTorch's time over ours (above 1: we are faster).
Targets: >= 0.5x the compiled one, >= 5x the eager one. ``--backward`` also times Ember's
forward+backward (PyTorch's flex_attention has no CPU backward to compare with).

Then the memory case: a causal flex_attention at S=16384 (B=1, H=2, D=64 by default), its peak
traced allocation above its inputs (tracemalloc, which sees NumPy's buffers); target < 256 MB.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings

import numpy as np

B, H, D = 4, 8, 64
SIZES = [256, 1024, 2048]
WINDOW = 256
CAP = 20.0


def causal(b, h, q, kv):
    return q >= kv


def sliding(b, h, q, kv):
    return (q >= kv) & (q - kv <= WINDOW)


def softcap(score, b, h, q, kv):
    return CAP * (score / CAP).tanh()


CASES = {"causal": (None, causal), "sliding": (None, sliding), "softcap": (softcap, causal)}


def best_of(fns, rounds: int) -> list[float]:
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for n, fn in enumerate(fns):
            if fn is None:
                continue
            start = time.perf_counter()
            fn()
            best[n] = min(best[n], time.perf_counter() - start)
    return best


def run_case(name: str, s: int, rounds: int, compiled: bool, eager_max: int, backward: bool) -> None:
    import torch
    import torch.nn.attention.flex_attention as tfa

    import ember
    import ember.nn.attention.flex_attention as efa

    score_mod, mask_mod = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((B, H, s, D), dtype=np.float32) for _ in range(3)]
    eq, ek, ev = (ember.tensor(a) for a in arrays)
    tq, tk, tv = (torch.tensor(a) for a in arrays)
    ebm = efa.create_block_mask(mask_mod, None, None, s, s, device="cpu")
    tbm = tfa.create_block_mask(mask_mod, None, None, s, s, device="cpu")

    def ours():
        return efa.flex_attention(eq, ek, ev, score_mod=score_mod, block_mask=ebm)

    def theirs_eager():
        return tfa.flex_attention(tq, tk, tv, score_mod=score_mod, block_mask=tbm)

    fns = [ours, theirs_eager if s <= eager_max else None, None]
    torch._dynamo.reset()
    if compiled:
        flex_c = torch.compile(tfa.flex_attention)

        def theirs_compiled():
            return flex_c(tq, tk, tv, score_mod=score_mod, block_mask=tbm)

        start = time.perf_counter()
        reference = theirs_compiled()
        compile_s = time.perf_counter() - start
        np.testing.assert_allclose(ours().numpy(), reference.numpy(), rtol=2e-4, atol=2e-4)
        fns[2] = theirs_compiled
    t_ours, t_eager, t_comp = best_of(fns, rounds)
    t_train = None
    if backward:
        gq, gk, gv = (ember.tensor(a, requires_grad=True) for a in arrays)

        def ours_training():
            efa.flex_attention(gq, gk, gv, score_mod=score_mod, block_mask=ebm).sum().backward()

        (t_train,) = best_of([ours_training], rounds)
    line = f"{name:8s} S={s:5d}  ember {t_ours * 1e3:9.2f} ms"
    if fns[1] is not None:
        line += f" | torch eager {t_eager * 1e3:9.2f} ms ({t_eager / t_ours:5.2f}x)"
    if fns[2] is not None:
        line += f" | torch.compile {t_comp * 1e3:9.2f} ms ({t_comp / t_ours:5.2f}x, compile {compile_s:.0f} s)"
    if t_train is not None:
        line += f" | ember fwd+bwd {t_train * 1e3:9.2f} ms (PyTorch has no CPU backward)"
    print(line, flush=True)


def memory(s: int, heads: int) -> None:
    import ember
    import ember.nn.attention.flex_attention as efa

    rng = np.random.default_rng(0)
    q, k, v = (ember.tensor(rng.standard_normal((1, heads, s, D), dtype=np.float32)) for _ in range(3))
    inputs = 3 * q.numel() * 4
    tracemalloc.start()
    start = time.perf_counter()
    bm = efa.create_block_mask(causal, None, None, s, s, device="cpu")
    out = efa.flex_attention(q, k, v, block_mask=bm)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"memory   S={s} B=1 H={heads} D={D} causal: peak {peak / 2**20:.1f} MiB above the inputs "
        f"({inputs / 2**20:.0f} MiB; output {out.numel() * 4 / 2**20:.0f} MiB of the peak), {elapsed:.1f} s "
        f"under tracemalloc; a float32 S x S score matrix per head would be {s * s * 4 / 2**20:.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile(flex_attention)")
    parser.add_argument("--eager-max", type=int, default=2048, help="largest S for PyTorch's eager flex_attention")
    parser.add_argument("--backward", action="store_true", help="also time Ember's forward+backward")
    parser.add_argument("--memory-size", type=int, default=16384)
    parser.add_argument("--memory-heads", type=int, default=2)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import torch

    torch.set_grad_enabled(False)
    for s in args.sizes:
        for name in args.cases:
            run_case(name, s, args.rounds, not args.no_compile, args.eager_max, args.backward)
    if args.memory_size:
        memory(args.memory_size, args.memory_heads)


if __name__ == "__main__":
    main()
