"""``ember.compile`` on a PyTorch program: capture, a graph break, recompiles, and the C++ backend.

python demo/compile_demo.py
"""

from __future__ import annotations

import time

import ember as torch
from ember._dynamo.testing import CompileCounter


def section(title: str) -> None:
    print(f"\n--- {title}")


def scaled(x, scale):
    y = x.sin() * scale
    print("  (a print inside the compiled function: the graph breaks here and resumes after it)")
    return y.relu().sum()


def best_of(fn, *args, rounds: int = 20) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(8, 16)

    section("a graph break, explained")
    print(torch._dynamo.explain(scaled)(x, 2.0))

    section("recompiles: a new size makes that dimension dynamic")
    counter = CompileCounter()
    compiled = torch.compile(scaled, backend=counter)
    for rows in (8, 9, 10, 11):
        compiled(torch.randn(rows, 16), 2.0)
    print(f"  4 calls with 4 sizes: {counter.frame_count} frames compiled, not 4 x 2")

    section("the default backend: fused C++ kernels, forward and backward")
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256), torch.nn.Linear(256, 64)
    )
    batch = torch.randn(512, 64)
    fast = torch.compile(model)
    start = time.perf_counter()
    out = fast(batch)
    print(f"  first call (capture, lowering, C++ build or disk cache): {time.perf_counter() - start:.2f} s")
    print(f"  largest difference from eager: {(out - model(batch)).abs().max().item():.2e}")
    out.sum().backward()
    print(f"  gradient of the first weight: {tuple(model[0].weight.grad.shape)}")
    with torch.no_grad():
        print(f"  eager {best_of(model, batch) * 1e3:.2f} ms, compiled {best_of(fast, batch) * 1e3:.2f} ms a call")


if __name__ == "__main__":
    main()
