"""Milliseconds per training step against PyTorch eager, measured in alternating phases in one run.

    python tools/bench/train.py [--steps N] [--rounds R] [--phases P] [--model gpt|cnn]

Two models: the GPT of the training test at full size (4 layers, width 128, context 64, batch 16)
and the small CNN (batch 16, 3x32x32). One step is forward, loss, backward and an AdamW update.
Both libraries start from the same weights and see the same batches. The ratio is Ember's time over
PyTorch's: below 1 is faster.

The models are built and measured one after the other, each released before the next is built.
Each library runs R rounds of N steps in a row, then the other does, P times over, and the best
round of each counts. Switching library every round would measure each with the other's worker
threads still spinning (OpenBLAS's and OpenMP's threads busy-wait for a while after their last
task), which on a machine with few cores takes a core from whichever runs next: PyTorch's CNN step
takes twice as long that way. Within a phase only the first round meets that, and the best is kept.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

import ember

try:
    import torch
except ImportError:
    raise SystemExit("tools/bench/train.py needs PyTorch installed (pip install torch==2.13.0)") from None

sys.path.insert(0, str(Path(__file__).parents[2] / "packages" / "nn" / "tests"))
from training_models import cnn, cnn_batch, cnn_loss, copy_state, gpt, gpt_batch


def _stepper(lib, model, loss_of, x, y):
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = lib.tensor(x), lib.tensor(y)

    def step():
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def _cases(models):
    """(name, Ember's step, PyTorch's step) per model, each built when the last one is done with:
    a model measured while another's weights, optimizer state and freed activations still fill the
    heap can run slower (Ember's CNN step did, by up to 15%), which a script training one model
    never sees."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if "gpt" not in models:
        gpt_batch(rng)  # the CNN sees the same batch either way
    else:
        theirs = gpt(torch)
        ours = gpt(ember)
        copy_state(theirs, ours, ember)
        x, y = gpt_batch(rng)
        yield (
            "GPT 4x128, ctx 64, batch 16",
            _stepper(ember, ours, lambda m, a, b: m(a, b), x, y),
            _stepper(torch, theirs, lambda m, a, b: m(a, b), x, y),
        )
        del theirs, ours
        gc.collect()
    if "cnn" in models:
        theirs, ours = cnn(torch), cnn(ember)
        copy_state(theirs, ours, ember)
        x, y = cnn_batch(rng)
        yield (
            "CNN 2 conv, batch 16, 32x32",
            _stepper(ember, ours, lambda m, a, b: cnn_loss(ember, m, a, b), x, y),
            _stepper(torch, theirs, lambda m, a, b: cnn_loss(torch, m, a, b), x, y),
        )


def _time(step, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        step()
    return (time.perf_counter() - start) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per phase")
    parser.add_argument("--phases", type=int, default=2, help="phases of each library")
    parser.add_argument("--model", choices=["gpt", "cnn"], action="append", help="only this model (repeatable)")
    args = parser.parse_args()
    print(f"ember {ember.__version__}, torch {torch.__version__}, torch threads {torch.get_num_threads()}")
    print(f"{'model':<32}{'ember ms/step':>15}{'pytorch ms/step':>17}{'ratio':>8}")
    for name, ours, theirs in _cases(set(args.model or ["gpt", "cnn"])):
        ours()
        theirs()
        best_ours = best_theirs = float("inf")
        for _ in range(args.phases):
            for _ in range(args.rounds):
                best_ours = min(best_ours, _time(ours, args.steps))
            for _ in range(args.rounds):
                best_theirs = min(best_theirs, _time(theirs, args.steps))
        print(f"{name:<32}{best_ours * 1e3:>15.1f}{best_theirs * 1e3:>17.1f}{best_ours / best_theirs:>7.2f}x")
        del ours, theirs  # the generator lets the models go when it builds the next


if __name__ == "__main__":
    main()
