"""AOT autograd against PyTorch's: tensors saved for the backward, and time to trace and partition.

    python tools/bench/aot.py [--rounds R]

Two models of the training test, built in both libraries from the same weights: one block of the
GPT (width 128, context 64, 4 heads; batch 2) and the CNN (batch 2, 32x32 images; in training mode:
BatchNorm's running statistics are input mutations, which functionalization turns into outputs).
Each is compiled with ``aot_function`` over ``functional_call`` (parameters and buffers as inputs),
nop compilers, and each partitioner (``mc+core``: the min-cut partitioner on graphs decomposed into
the core op set by each library's table, what ``aot_eager_decomp_partition`` runs). Reported per case:

- tensors saved for the backward (the backward graph's inputs besides the tangents);
  target for the min-cut partitioner: no more than PyTorch's;
- time to trace and partition: a fresh ``aot_function``'s first call less its second call (which
  only runs the compiled forward), the best of R rounds, Ember and PyTorch alternately;
  target: ratio (Ember over PyTorch) at most 1.0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import ember
import ember.func
from ember._decomp import core_aten_decompositions
from ember.aot import aot_function, default_partition, min_cut_rematerialization_partition, nop

try:
    import functorch.compile as torch_compile
    import torch
    import torch.func
    from torch._decomp import core_aten_decompositions as torch_decompositions
except ImportError:
    raise SystemExit("tools/bench/aot.py needs PyTorch installed (pip install torch==2.13.0)") from None

sys.path.insert(0, str(Path(__file__).parents[2] / "packages" / "nn" / "tests"))
from training_models import cnn, copy_state, gpt

# label -> (ours, theirs, with the core decompositions: what the aot_eager_decomp_partition backends run)
PARTITIONERS = {
    "default": (default_partition, torch_compile.default_partition, False),
    "min_cut": (min_cut_rematerialization_partition, torch_compile.min_cut_rematerialization_partition, False),
    "mc+core": (min_cut_rematerialization_partition, torch_compile.min_cut_rematerialization_partition, True),
}


def _block(lib):
    return gpt(lib, layers=1).blocks[0]


def _cnn(lib):
    return cnn(lib).train()


MODELS = {
    "GPT block": (_block, (2, 64, 128)),
    "CNN": (_cnn, (2, 3, 32, 32)),
}


class _Saved:
    """A backward compiler that counts the tensors the backward takes besides the tangents: the saved ones."""

    def __init__(self, run, tensor_type) -> None:
        self.run, self.tensor_type, self.count = run, tensor_type, None

    def __call__(self, gm, example_inputs):
        if self.count is None:
            placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
            self.count = sum(
                isinstance(n.meta.get("val"), self.tensor_type) and not n.name.startswith("tangents")
                for n in placeholders
            )
        return self.run(gm, example_inputs)


def _torch_nop(gm, _inputs):
    return torch_compile.make_boxed_func(gm.forward)


def _case(lib, module, x, partition, decompose: bool) -> tuple[float, int]:
    """(seconds to trace and partition, tensors saved) for one fresh compile."""
    params = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    if lib is torch:

        def fn(p, x):
            return torch.func.functional_call(module, p, (x,))

        bw = _Saved(_torch_nop, torch.Tensor)
        table = torch_decompositions() if decompose else None
        compiled = torch_compile.aot_function(fn, _torch_nop, bw, partition_fn=partition, decompositions=table)
    else:

        def fn(p, x):
            return ember.func.functional_call(module, p, (x,))

        bw = _Saved(nop, ember.Tensor)
        table = core_aten_decompositions() if decompose else None
        compiled = aot_function(fn, nop, bw, partition_fn=partition, decompositions=table)
    start = time.perf_counter()
    out = compiled(params, x)
    first = time.perf_counter() - start
    start = time.perf_counter()
    compiled(params, x)
    again = time.perf_counter() - start
    if bw.count is None:  # PyTorch compiles the backward graph on the first backward call
        out.sum().backward()
    return max(first - again, 0.0), bw.count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'model':<10} {'partitioner':<8} {'saved':>6} {'torch':>6} {'ratio':>6}   {'trace+partition':>15} {'torch':>9} {'ratio':>6}"
    )
    for name, (build, shape) in MODELS.items():
        torch.manual_seed(0)
        theirs, ours = build(torch), build(ember)
        copy_state(theirs, ours, ember)
        x = np.random.default_rng(0).standard_normal(shape).astype("float32")
        tx, ex = torch.tensor(x), ember.tensor(x)
        for label, (our_partition, their_partition, decompose) in PARTITIONERS.items():
            ours_best = theirs_best = float("inf")
            for _ in range(args.rounds):
                seconds, our_saved = _case(ember, ours, ex, our_partition, decompose)
                ours_best = min(ours_best, seconds)
                seconds, their_saved = _case(torch, theirs, tx, their_partition, decompose)
                theirs_best = min(theirs_best, seconds)
            print(
                f"{name:<10} {label:<8} {our_saved:>6} {their_saved:>6} {our_saved / their_saved:>6.2f}   "
                f"{ours_best * 1e3:>12.1f} ms {theirs_best * 1e3:>6.1f} ms {ours_best / theirs_best:>6.2f}"
            )


if __name__ == "__main__":
    main()
