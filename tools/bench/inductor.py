"""Ember's code generator against PyTorch's ``torch.compile``, measured in the same run.

    python tools/bench/inductor.py [--rounds R] [--threads T]

Both libraries on the CPU, float32, T threads each (2 by default: ``OMP_NUM_THREADS`` is set before
either library loads, and each library's ``set_num_threads``). Cases: a pointwise chain over 4M elements,
softmax 1024x1024, layer norm 4096x1024 (with weight and bias), sum over 4M; AdamW's step over
100 parameters (``compile(opt.step)``, with each library's eager step as well); and a GEMM 512x512x512
under ``mode="max-autotune"`` on both sides, with the implementation Ember chose and its timings; FlexAttention
with a causal BlockMask (B=2, H=8, L=1024, E=64: one generated kernel against PyTorch's). Each function is
compiled by both (``backend="inductor"``), run once to compile, then timed: the median of R calls.
The MLP block (GPT's, C=384, on 2048 rows) is timed forward, and forward+backward: a function that
returns a loss is compiled, and ``loss.backward()`` is part of each timed call.
Reported: Ember's time, PyTorch's, their ratio (target: at most 1.0), and the compile of each: the
first call less a warm call, in this process (both libraries start the run with empty cache folders
of their own, but a case may reuse what its library compiled for an earlier one: the MLP's
forward+backward, kernels of its forward). A second table (``_inductor_models.py``) runs whole
models: a GPT block forward and forward+backward, a small CNN forward+backward, 50 small ops on 8x8
tensors, with cold starts of both libraries and Ember's warm start (each in a new process: a cold one
with an empty cache folder, the warm one reading what Ember's cold one wrote; "of cold" is their
ratio, the issue's warm-start measure) and Ember eager times. "embedding fwd+bwd": GPT-2's token embedding
(50257x768) on 4096 tokens, forward and backward. ``--only GPT,CNN`` picks cases by name.
Asserts nothing; the timings are only as quiet as the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--only", default="", help="run only the cases whose name contains one of these (comma-separated)"
    )
    return parser.parse_args()


ARGS = _parse()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
# empty cache folders of the run's own for both libraries, before either reads its setting
os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember-bench-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="torch-bench-")

import ember  # noqa: E402, I001  (before NumPy: it sets OpenBLAS's thread timeout, as a user's `import ember` does)
import numpy as np  # noqa: E402

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


def mlp_block(lib):
    """GPT's MLP (C=384): LayerNorm -> Linear(C, 4C) -> GELU -> Linear(4C, C), plus the residual."""
    nn = lib.nn
    lib.manual_seed(0)
    ln, fc, proj = nn.LayerNorm(384), nn.Linear(384, 1536), nn.Linear(1536, 384)
    return lambda x: x + proj(nn.functional.gelu(fc(ln(x))))


def mlp_block_loss(lib):
    block = mlp_block(lib)
    return lambda x: block(x).mean()


mlp_block_loss.backward = True  # timed as loss = f(x); loss.backward()


def flex_causal(lib):
    """FlexAttention with a causal BlockMask (128x128 blocks), each library's ``flex_attention``: Ember's
    compiles to one generated C++ kernel, PyTorch's to its CPU flex template."""
    if lib is ember:
        from ember.nn.attention.flex_attention import create_block_mask, flex_attention

        bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, 1024, 1024)
    else:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, 1024, 1024, device="cpu")
    return lambda q, k, v: flex_attention(q, k, v, block_mask=bm)


def embedding_loss(lib):
    """GPT-2's token embedding (50257x768) on 4096 tokens: the gather forward, the scatter-add backward."""
    lib.manual_seed(0)
    emb = lib.nn.Embedding(50257, 768)
    return lambda idx: emb(idx).pow(2).mean()


embedding_loss.backward = True
embedding_loss.arrays = lambda rng: [rng.integers(0, 50257, size=(4096,))]


CASES = {
    "pointwise chain 4M": (chain, [(4 * 1024 * 1024,)]),
    "softmax 1024x1024": (softmax, [(1024, 1024)]),
    "layer norm 4096x1024": (layer_norm, [(4096, 1024), (1024,), (1024,)]),
    "sum 4M": (total, [(4 * 1024 * 1024,)]),
    "MLP block forward": (mlp_block, [(2048, 384)]),
    "MLP block fwd+bwd": (mlp_block_loss, [(2048, 384)]),
    "flex attention causal B=2 H=8 L=1024 E=64": (flex_causal, [(2, 8, 1024, 64)] * 3),
    "embedding fwd+bwd": (embedding_loss, []),
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


def _measure(lib, fn, backward: bool, arrays: list) -> tuple[float, float]:
    """``_time`` of ``fn`` without autograd, or, for a loss (``backward``), of ``fn(x).backward()``."""
    args = [lib.tensor(a) for a in arrays]
    if backward:
        return _time(lambda *a: fn(*a).backward(), args, ARGS.rounds)
    with lib.no_grad():
        return _time(fn, args, ARGS.rounds)


def main() -> None:
    torch.set_num_threads(ARGS.threads)
    ember.set_num_threads(ARGS.threads)  # Ember's count does not follow OMP_NUM_THREADS
    print(f"threads: {ARGS.threads}, float32, median of {ARGS.rounds} calls", file=sys.stderr)
    print(f"{'case':<22} {'ember':>10} {'torch':>10} {'ratio':>6}   {'compile':>9} {'torch':>9} {'ratio':>6}")
    rng = np.random.default_rng(0)
    for name, (build, shapes) in CASES.items():
        if not any(part in name for part in ARGS.only.split(",")):
            continue
        arrays = [rng.standard_normal(s).astype("float32") for s in shapes]
        if hasattr(build, "arrays"):  # inputs other than float data (token ids)
            arrays = build.arrays(rng)
        ours = ember.compile(build(ember), backend="inductor")
        theirs = torch.compile(build(torch), backend="inductor")
        our_compile, our_time = _measure(ember, ours, getattr(build, "backward", False), arrays)
        their_compile, their_time = _measure(torch, theirs, getattr(build, "backward", False), arrays)
        print(
            f"{name:<22} {our_time * 1e3:>7.2f} ms {their_time * 1e3:>7.2f} ms {our_time / their_time:>6.2f}   "
            f"{our_compile:>7.2f} s {their_compile:>7.2f} s {our_compile / max(their_compile, 1e-9):>6.2f}"
        )

    if any(part in "AdamW step, 100 params" for part in ARGS.only.split(",")):
        bench_adamw_step()


def _adamw_params(lib, rng) -> list:
    """100 parameters, as 50 Linear(256, 256) layers have them: 50 weights (256, 256), 50 biases (256,);
    gradients set."""
    params = []
    for _ in range(50):
        for shape in ((256, 256), (256,)):
            p = lib.nn.Parameter(lib.tensor(rng.standard_normal(shape).astype("float32")))
            p.grad = lib.tensor(rng.standard_normal(shape).astype("float32"))
            params.append(p)
    return params


def bench_adamw_step() -> None:
    """AdamW's ``step()`` over 100 parameters: compiled (``ember.compile(opt.step)``, against PyTorch's
    ``torch.compile(opt.step)``), and each library's eager step (the default per-parameter loop on the CPU)."""
    name = "AdamW step, 100 params"
    timings = {}
    for lib in (ember, torch):
        rng = np.random.default_rng(0)
        eager_opt = lib.optim.AdamW(_adamw_params(lib, rng), lr=1e-3)
        compiled_opt = lib.optim.AdamW(_adamw_params(lib, rng), lr=1e-3)
        step = lib.compile(compiled_opt.step) if lib is ember else torch.compile(compiled_opt.step)
        timings[lib.__name__] = (*_time(step, [], ARGS.rounds), _time(eager_opt.step, [], ARGS.rounds)[1])
    (ours_c, ours, ours_eager), (theirs_c, theirs, theirs_eager) = timings["ember"], timings["torch"]
    print(
        f"{name:<22} {ours * 1e3:>7.2f} ms {theirs * 1e3:>7.2f} ms {ours / theirs:>6.2f}   "
        f"{ours_c:>7.2f} s {theirs_c:>7.2f} s {ours_c / max(theirs_c, 1e-9):>6.2f}"
    )
    print(
        f"{'  (eager step)':<22} {ours_eager * 1e3:>7.2f} ms {theirs_eager * 1e3:>7.2f} ms {ours_eager / theirs_eager:>6.2f}"
    )


def gemm_max_autotune() -> None:
    """GEMM 512x512x512 float32 under max-autotune: Ember's (its fastest of BLAS and its C++ template)
    against ``torch.compile(mode="max-autotune")``, and which implementation Ember chose."""
    from ember.inductor import autotune

    n = 512
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))
    ours = ember.compile(lambda x, y: x @ y, mode="max-autotune")
    theirs = torch.compile(lambda x, y: x @ y, mode="max-autotune")
    start = len(autotune.history)
    with ember.no_grad():
        our_compile, our_time = _time(ours, [ember.tensor(a), ember.tensor(b)], ARGS.rounds)
    with torch.no_grad():
        their_compile, their_time = _time(theirs, [torch.tensor(a), torch.tensor(b)], ARGS.rounds)
    name = "GEMM 512^3 autotune"
    print(
        f"{name:<22} {our_time * 1e3:>7.2f} ms {their_time * 1e3:>7.2f} ms {our_time / their_time:>6.2f}   "
        f"{our_compile:>7.2f} s {their_compile:>7.2f} s {our_compile / max(their_compile, 1e-9):>6.2f}"
    )
    for problem, choice in autotune.history[start:]:
        timings = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in sorted(choice.timings.items(), key=lambda kv: kv[1]))
        cached = " (cached choice)" if choice.cached else ""
        print(f"  ember chose {choice.name} for {problem.describe()}{cached}: {timings}")


if __name__ == "__main__":
    main()
    if any(part in "GEMM 512^3 autotune" for part in ARGS.only.split(",")):
        gemm_max_autotune()
    from _inductor_models import models_main

    models_main(ARGS)
