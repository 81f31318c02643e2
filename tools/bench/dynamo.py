"""``ember.compile`` against ``torch.compile``: capture time, per-call overhead, regional compilation.

    python tools/bench/dynamo.py [--rounds R] [--calls N] [--layers L]

Both libraries are measured in the same run, alternately, and the best round of each counts:

- capture: the 12-layer GPT of the training benchmark (width 128, context 64) compiled whole with
  ``backend="eager"``, called on one 8-token sequence (so that running the model is small beside
  capturing it); the first call's time less the uncompiled model's fastest call, so what is left is
  bytecode analysis, tracing and guard building. Target: ratio (Ember over PyTorch) at most 0.5.
- per-call overhead: a function of 8 small tensors returning ``x0 + 1``, compiled with
  ``backend="eager"``; a compiled call's time less the plain call's (guard checks and the frame
  hook's work). Target: ratio at most 1.0.
- regional against whole-model cold compile: every block compiled on its own
  (``for b in model.blocks: b.compile(backend="eager")``), which compiles one block's code for all
  blocks, against the whole model compiled at once; the first call's time less the uncompiled
  model's fastest call.

Rows whose Ember side cannot run yet (no ``ember.compile``, or it fails on the program) print
"not available" with the reason; the PyTorch side is printed either way.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import ember

try:
    import torch
    import torch._dynamo
except ImportError:
    raise SystemExit("tools/bench/dynamo.py needs PyTorch installed (pip install torch==2.13.0)") from None

sys.path.insert(0, str(Path(__file__).parents[2] / "packages" / "nn" / "tests"))
from training_models import copy_state, gpt, gpt_batch

# Capture does not depend on the batch; a small one keeps the model's own run out of the numbers.
BATCH, TOKENS = 1, 8


def _reset(lib) -> None:
    if lib is torch:
        torch._dynamo.reset()
    else:
        ember._dynamo.reset()
    gc.collect()


def _fastest(run: Callable, target, times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        run(target)
        best = min(best, time.perf_counter() - start)
    return best


def _cold(lib, build: Callable, run: Callable, eager: float) -> float:
    """Seconds of compile in the first call of ``run(build())``: that call less ``eager``, the
    uncompiled model's fastest call (not a later compiled call's, which may itself recompile)."""
    _reset(lib)
    target = build()
    start = time.perf_counter()
    run(target)
    return max(time.perf_counter() - start - eager, 0.0)


def _models(layers: int):
    torch.manual_seed(0)
    theirs, ours = gpt(torch, layers=layers), gpt(ember, layers=layers)
    copy_state(theirs, ours, ember)
    x, y = gpt_batch(np.random.default_rng(0), batch=BATCH, context=TOKENS)
    return {torch: (theirs, torch.tensor(x), torch.tensor(y)), ember: (ours, ember.tensor(x), ember.tensor(y))}


def _whole(lib, model):
    return lambda: lib.compile(model, backend="eager")


def _regional(lib, layers: int, weights):
    """A fresh model each round: blocks compiled in place stay compiled, whatever ``reset`` forgets."""

    def build():
        model = gpt(lib, layers=layers)
        model.load_state_dict(weights.state_dict())
        for block in model.blocks:
            block.compile(backend="eager")
        return model

    return build


def _overhead(lib, calls: int, rounds: int) -> float:
    """Seconds a compiled call of an 8-input trivial function takes beyond the plain call."""

    def fn(x0, x1, x2, x3, x4, x5, x6, x7):
        return x0 + 1

    args = [lib.ones(4) for _ in range(8)]
    _reset(lib)
    compiled = lib.compile(fn, backend="eager")
    compiled(*args)
    compiled(*args)

    def per_call(f) -> float:
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(calls):
                f(*args)
            best = min(best, (time.perf_counter() - start) / calls)
        return best

    return per_call(compiled) - per_call(fn)


def _measure(lib, what: Callable[[], float]) -> tuple[float | None, str]:
    try:
        return what(), ""
    except Exception as error:  # the row says why Ember's side did not run
        if lib is torch:
            raise
        return None, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:70]


def _best(lib, what: Callable[[], float], rounds: int) -> tuple[float | None, str]:
    best = None
    for _ in range(rounds):
        value, why = _measure(lib, what)
        if value is None:
            return None, why
        best = value if best is None else min(best, value)
    return best, ""


def _row(label: str, ours: tuple[float | None, str], theirs: tuple[float | None, str], unit: str, scale: float) -> None:
    their_value = theirs[0]
    if ours[0] is None:
        print(f"{label:<34} {'not available':>13} {their_value * scale:>10.1f} {unit:<3}   ({ours[1]})")
        return
    ratio = ours[0] / their_value if their_value else float("nan")
    print(f"{label:<34} {ours[0] * scale:>10.1f} {unit:<2} {their_value * scale:>10.1f} {unit:<3} {ratio:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each cold compile (best counts)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per overhead measurement")
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    print(f"{'':<34} {'ember':>13} {'torch':>14} {'ratio':>6}")

    # The first compile in a process pays for imports; neither library's numbers should include them.
    for lib in (torch, ember):
        _measure(lib, lambda lib=lib: _overhead(lib, 10, 1))

    results = {}
    for lib in (ember, torch):
        results[lib, "overhead"] = _measure(lib, lambda lib=lib: _overhead(lib, args.calls, 5))
    _row("per-call overhead, 8 inputs", results[ember, "overhead"], results[torch, "overhead"], "us", 1e6)

    models = _models(args.layers)

    def run(lib):
        _, x, y = models[lib]
        return lambda compiled: compiled(x, y)

    eager = {lib: _fastest(run(lib), models[lib][0]) for lib in (ember, torch)}
    for lib in (ember, torch):
        model = models[lib][0]
        results[lib, "whole"] = _best(
            lib, lambda lib=lib, model=model: _cold(lib, _whole(lib, model), run(lib), eager[lib]), args.rounds
        )
    for lib in (ember, torch):
        model = models[lib][0]
        results[lib, "regional"] = _best(
            lib,
            lambda lib=lib, model=model: _cold(lib, _regional(lib, args.layers, model), run(lib), eager[lib]),
            args.rounds,
        )

    _row(f"capture, GPT {args.layers} layers (eager)", results[ember, "whole"], results[torch, "whole"], "ms", 1e3)
    _row("cold compile, regional", results[ember, "regional"], results[torch, "regional"], "ms", 1e3)
    for lib, name in ((ember, "ember"), (torch, "torch")):
        whole, regional = results[lib, "whole"][0], results[lib, "regional"][0]
        if not whole or regional is None:
            print(f"{'regional / whole, ' + name:<34} {'not available':>13}")
        else:
            print(f"{'regional / whole, ' + name:<34} {regional / whole:>13.2f}")


if __name__ == "__main__":
    main()
