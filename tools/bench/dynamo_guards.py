"""The guard check of a compiled frame with 8 tensor inputs, against PyTorch's, measured in one run.

    python tools/bench/dynamo_guards.py [--rounds R] [--calls N]

Both sides compile ``a + b + ... + h`` with ``backend="eager"`` and call the check of the cache
entry it made on the frame's locals dict: Ember's ``check_fn`` (8 tensor guards, grad mode,
autocast, default dtype, backend), inside a region compiled for that backend as the frame hook calls
it; PyTorch's ``guard_manager.check(f_locals)``. Best of R rounds of N calls each; the target is at
most 10 us per check.
"""

from __future__ import annotations

import argparse
import time

import ember
import ember._dynamo
from ember.dynamo import _frame_hook

try:
    import torch
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
except ImportError:
    raise SystemExit("tools/bench/dynamo_guards.py needs PyTorch installed (pip install torch==2.13.0)") from None

NAMES = ("a", "b", "c", "d", "e", "f", "g", "h")


def add8(a, b, c, d, e, f, g, h):
    return a + b + c + d + e + f + g + h


def _per_call(check, f_locals: dict, rounds: int, calls: int) -> float:
    assert check(f_locals)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            check(f_locals)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()

    ours = {n: ember.randn(4, 8) for n in NAMES}
    ember.compile(add8, backend="eager")(**ours)
    (entry,) = _frame_hook.cache_entries(add8.__code__)

    theirs = {n: torch.randn(4, 8) for n in NAMES}
    torch.compile(add8, backend="eager")(**theirs)
    torch_check = _debug_get_cache_entry_list(add8.__code__)[0].guard_manager.check

    with ember._dynamo.optimize("eager"):
        e = _per_call(entry.check_fn, ours, args.rounds, args.calls)
    t = _per_call(torch_check, theirs, args.rounds, args.calls)
    print(f"guard check, 8 tensor inputs: ember {e * 1e6:.2f} us, torch {t * 1e6:.2f} us, ratio {e / t:.2f}")


if __name__ == "__main__":
    main()
