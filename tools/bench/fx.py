"""Time to build graphs of a 12-layer GPT against PyTorch's ``torch.fx``, measured in one run.

    python tools/bench/fx.py [--rounds R] [--layers L]

Two cases on the GPT of the training test (width 128, context 64, batch 2; 12 layers by default):
``symbolic_trace(model)`` (a graph of module calls and functions, no data touched) and
``make_fx(forward, tracing_mode="symbolic")`` of ``functional_call(model, params, (idx, targets))``
on a batch of token ids (a graph of aten ops, run on fake tensors with symbolic sizes; the
parameters are inputs, as AOT autograd traces them). Each case runs Ember and PyTorch alternately for R rounds and
keeps the best round of each; the ratio is Ember's time over PyTorch's (below 1 is faster).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import ember
import ember.func
import ember.fx
from ember.fx.experimental.proxy_tensor import make_fx as ember_make_fx

try:
    import torch
    import torch.func
    import torch.fx
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx
except ImportError:
    raise SystemExit("tools/bench/fx.py needs PyTorch installed (pip install torch==2.13.0)") from None

sys.path.insert(0, str(Path(__file__).parents[2] / "packages" / "nn" / "tests"))
from training_models import copy_state, gpt


def _best(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    theirs, ours = gpt(torch, layers=args.layers), gpt(ember, layers=args.layers)
    copy_state(theirs, ours, ember)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 64, (2, 64))
    targets = rng.integers(0, 64, (2, 64))
    t_inputs = (torch.tensor(idx), torch.tensor(targets))
    e_inputs = (ember.tensor(idx), ember.tensor(targets))
    e_params, t_params = dict(ours.named_parameters()), dict(theirs.named_parameters())

    def e_forward(params, idx, targets):
        return ember.func.functional_call(ours, params, (idx, targets))

    def t_forward(params, idx, targets):
        return torch.func.functional_call(theirs, params, (idx, targets))

    cases = [
        ("symbolic_trace", lambda: ember.fx.symbolic_trace(ours), lambda: torch.fx.symbolic_trace(theirs)),
        (
            "make_fx symbolic",
            lambda: ember_make_fx(e_forward, tracing_mode="symbolic")(e_params, *e_inputs),
            lambda: torch_make_fx(t_forward, tracing_mode="symbolic")(t_params, *t_inputs),
        ),
    ]
    print(f"GPT {args.layers}x128, ember {ember.__version__}, torch {torch.__version__}")
    print(f"{'case':<20}{'ember ms':>10}{'pytorch ms':>12}{'ratio':>8}{'nodes':>14}")
    for name, mine, reference in cases:
        nodes = (len(mine().graph.nodes), len(reference().graph.nodes))
        ours_s = theirs_s = float("inf")
        for _ in range(args.rounds):
            ours_s = min(ours_s, _best(mine, 1))
            theirs_s = min(theirs_s, _best(reference, 1))
        print(
            f"{name:<20}{ours_s * 1e3:>10.1f}{theirs_s * 1e3:>12.1f}{ours_s / theirs_s:>7.2f}x"
            f"{nodes[0]:>7}/{nodes[1]:<6}"
        )


if __name__ == "__main__":
    main()
