"""Attention on CUDA: Ember's Triton FlashAttention-2 against PyTorch's flash and cuDNN SDPA backends.

    python tools/bench/attention_cuda.py [--rounds R] [--quick]
    (tools/bench/attention.py calls ``run(args)`` for ``--device cuda``)

bfloat16, head dims 64 and 128 with 2048 channels (32 or 16 heads), batch x sequence = 16k tokens, sequence
512 to 16k, causal and not: the setting of the FlashAttention-2 paper. FLOPs are 4·B·H·S²·D (two matmuls),
halved when causal, and 2.5 times that for the backward pass. Each case times every implementation in
turn for R rounds (CUDA events around a few calls) and keeps each one's best round. Ratios are our
TFLOP/s over PyTorch's: above 1 is faster. A backend PyTorch cannot run here prints as n/a. Before timing,
each case checks our output and gradients against the flash backend, so a broken kernel shows at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

TOKENS = 16 * 1024
CHANNELS = 2048
SEQUENCES = [512, 1024, 2048, 4096, 8192, 16384]
QUICK_SEQUENCES = [1024, 4096]
HEAD_DIMS = [64, 128]
DEVICE = "cuda"


def _time_ms(torch, fn: Callable[[], object], calls: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def _best_ms(torch, fns: dict[str, Callable[[], object] | None], rounds: int, calls: int) -> dict[str, float | None]:
    """Interleaved rounds, so that clock changes hit every implementation alike; the best round of each."""
    best: dict[str, float | None] = {name: (None if fn is None else float("inf")) for name, fn in fns.items()}
    for fn in fns.values():
        if fn is not None:
            fn()  # warm-up: compilation, autotuning, workspace allocation
    torch.cuda.synchronize()
    for _ in range(rounds):
        for name, fn in fns.items():
            if fn is not None:
                best[name] = min(best[name], _time_ms(torch, fn, calls))
    return best


def _torch_case(torch, backend, q, k, v, grad_out, is_causal: bool):
    """(forward, backward) closures for one PyTorch backend, or (None, None) where it cannot run."""
    from torch.nn.attention import sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    qg, kg, vg = (t.detach().requires_grad_(True) for t in (q, k, v))

    def forward():
        with sdpa_kernel(backend):
            return scaled_dot_product_attention(q, k, v, is_causal=is_causal)

    try:
        with sdpa_kernel(backend):
            out = scaled_dot_product_attention(qg, kg, vg, is_causal=is_causal)
        torch.autograd.grad(out, (qg, kg, vg), grad_out, retain_graph=True)
    except RuntimeError:
        return None, None, None

    def backward():
        return torch.autograd.grad(out, (qg, kg, vg), grad_out, retain_graph=True)

    return forward, backward, (out.detach(), *backward())


def _ours_case(torch, flash_triton, q, k, v, grad_out, is_causal: bool):
    batch, heads, seq, _ = q.shape
    out = torch.empty_like(q)
    lse = torch.empty(batch, heads, seq, dtype=torch.float32, device=q.device)
    grads = [torch.empty_like(t) for t in (q, k, v)]

    def forward():
        flash_triton.forward(q, k, v, out, lse, is_causal=is_causal)

    def backward():
        flash_triton.backward(grad_out, q, k, v, out, lse, *grads, is_causal=is_causal)

    forward()
    backward()
    return forward, backward, (out, *grads)


def _check(torch, ours, reference, label: str) -> None:
    """Our results against the flash backend's: bf16 rounding allows about 1e-2 relative error."""
    for name, got, want in zip(("out", "grad_q", "grad_k", "grad_v"), ours, reference, strict=True):
        error = ((got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-30)).item()
        if not error < 3e-2:
            print(f"  WARNING {label}: {name} differs from PyTorch's flash backend (relative error {error:.2e})")


def _tflops(flops: float, ms: float | None) -> str:
    return f"{'n/a':>7}" if ms is None else f"{flops / ms / 1e9:7.1f}"


def _ratio(ours: float | None, theirs: float | None) -> str:
    return "n/a" if ours is None or theirs is None else f"{theirs / ours:5.2f}x"


def run(args) -> None:
    try:
        import torch
        from torch.nn.attention import SDPBackend
    except ImportError:
        raise SystemExit("attention_cuda needs PyTorch with CUDA") from None
    if not torch.cuda.is_available():
        raise SystemExit("attention_cuda needs a CUDA device; none is visible")
    from ember.sdpa.kernels import flash_triton

    rounds = max(1, int(args.rounds))
    sequences = QUICK_SEQUENCES if args.quick else SEQUENCES
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    print(f"attention on {torch.cuda.get_device_name()}, bfloat16, {TOKENS} tokens, {CHANNELS} channels")
    print("TFLOP/s of ours and PyTorch's backends; ratios are ours over theirs (above 1: we are faster)")
    header = f"{'pass':4} {'D':>4} {'S':>6} {'B':>3} {'H':>3} {'causal':6} {'ours':>7} {'flash':>7} {'cudnn':>7}"
    print(header + f" {'vs flash':>9} {'vs cudnn':>9}")
    for head_dim in HEAD_DIMS:
        heads = CHANNELS // head_dim
        for seq in sequences:
            batch = max(1, TOKENS // seq)
            for is_causal in (False, True):
                generator = torch.Generator(device=DEVICE).manual_seed(0)
                shape = (batch, heads, seq, head_dim)
                q, k, v, grad_out = (
                    torch.randn(shape, generator=generator, device=DEVICE, dtype=torch.bfloat16) for _ in range(4)
                )
                flops = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if is_causal else 1.0)
                ours = _ours_case(torch, flash_triton, q, k, v, grad_out, is_causal)
                theirs = {name: _torch_case(torch, b, q, k, v, grad_out, is_causal) for name, b in backends.items()}
                label = f"D={head_dim} S={seq} causal={is_causal}"
                if theirs["flash"][2] is not None:
                    _check(torch, ours[2], theirs["flash"][2], label)
                calls = 20 if seq <= 2048 else 5
                for index, (name, factor) in enumerate((("fwd", 1.0), ("bwd", 2.5))):
                    fns = {"ours": ours[index], **{n: case[index] for n, case in theirs.items()}}
                    ms = _best_ms(torch, fns, rounds, calls)
                    row = f"{name:4} {head_dim:>4} {seq:>6} {batch:>3} {heads:>3} {is_causal!s:6}"
                    row += " " + " ".join(_tflops(flops * factor, ms[n]) for n in ("ours", "flash", "cudnn"))
                    row += f" {_ratio(ms['ours'], ms['flash']):>9} {_ratio(ms['ours'], ms['cudnn']):>9}"
                    print(row, flush=True)
                del q, k, v, grad_out, ours, theirs
                torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="two sequence lengths and fewer rounds")
    args = parser.parse_args()
    if args.quick:
        args.rounds = min(args.rounds, 2)
    run(args)


if __name__ == "__main__":
    main()
