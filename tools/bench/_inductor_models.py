"""Whole-model cases of ``tools/bench/inductor.py``: a GPT block, a small CNN, 50 small ops.

Each case is built the same way in both libraries from the same weights. "forward" cases run under
``no_grad``; "fwd+bwd" cases time the compiled function returning a loss plus ``loss.backward()``.
Reported per case: Ember's time and PyTorch's (median of R steps), the cold compile of each (first
step less a warm step, in a new process with an empty cache folder of its own; target: Ember's at
most half of PyTorch's), Ember's warm start (the same case compiled in a new process with the disk
cache filled by its cold run, the median of three; target: at most 10% of the cold compile), and Ember's eager time for
reference. The steps of Ember compiled, PyTorch compiled
and Ember eager are timed in turns, so that load on the machine falls on all three alike.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def gpt_block(lib, width: int = 384, heads: int = 6):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    return Block()


def small_cnn(lib, classes: int = 10):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 16 * 16, classes),
    )  # fmt: skip


def fifty_ops(x, y):
    for i in range(50):
        k = i % 5
        if k == 0:
            x = x * y + 0.5
        elif k == 1:
            x = x.tanh()
        elif k == 2:
            x = x - x.mean(-1, keepdim=True)
        elif k == 3:
            x = x.abs().sqrt() * y
        else:
            x = ((x * x).sum(0, keepdim=True) + 1).rsqrt() * x
    return x


def _same_weights(ours, theirs, torch) -> None:
    state = {k: torch.tensor(v.detach().numpy().copy()) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)


def _case(name, lib, rng_seed: int = 0):
    """(step function, args, model or None) for ``lib`` (ember or torch), the same numbers in both."""
    import ember

    rng = np.random.default_rng(rng_seed)
    F = lib.nn.functional
    if name.startswith("GPT"):
        ember.manual_seed(0)
        model = gpt_block(ember)
        x = rng.standard_normal((8, 256, 384)).astype("float32")
        if lib is not ember:
            twin = gpt_block(lib)
            _same_weights(model, twin, lib)
            model = twin
        x = lib.tensor(x)
        if name.endswith("forward"):
            model.eval()
            return model, [x], None
        return (lambda t: (model(t) ** 2).mean()), [x], model
    if name.startswith("CNN"):
        ember.manual_seed(0)
        model = small_cnn(ember)
        x = rng.standard_normal((32, 3, 32, 32)).astype("float32")
        y = rng.integers(0, 10, (32,))
        if lib is not ember:
            twin = small_cnn(lib)
            _same_weights(model, twin, lib)
            model = twin
        return (lambda a, b: F.cross_entropy(model(a), b)), [lib.tensor(x), lib.tensor(y)], model
    a = rng.standard_normal((8, 8)).astype("float32")
    b = rng.uniform(0.5, 1.0, (8, 8)).astype("float32")
    return fifty_ops, [lib.tensor(a), lib.tensor(b)], None


MODEL_CASES = ["GPT block forward", "GPT block fwd+bwd", "CNN fwd+bwd", "50 ops on 8x8"]


def _stepper(lib, compiled, args, model):
    """One timed step: forward only (no grad), or forward and backward of the loss."""
    if model is None:

        def step():
            with lib.no_grad():
                compiled(*args)

        return step
    params = list(model.parameters())

    def train_step():
        for p in params:
            p.grad = None
        compiled(*args).backward()

    return train_step


def _first(step) -> float:
    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    step()  # a second call may still compile (a backward graph, a recompile)
    return first


def _interleaved(steps: list, rounds: int) -> list[float]:
    """The median time of each step, timed in turns so that all see the same load on the machine."""
    times: list[list[float]] = [[] for _ in steps]
    for _ in range(rounds):
        for step, out in zip(steps, times, strict=True):
            start = time.perf_counter()
            step()
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def start(lib, name: str, threads: int, rounds: int) -> tuple[float, float]:
    """(compile seconds, median step seconds) of ``lib``'s compiled case (first call less a warm call)."""
    lib.set_num_threads(threads)
    fn, args, model = _case(name, lib)
    step = _stepper(lib, lib.compile(fn, backend="inductor"), args, model)
    first = _first(step)
    (median,) = _interleaved([step], rounds)
    return max(first - median, 0.0), median


def _new_process_compile(name: str, args, cache: str, lib: str = "ember") -> float:
    """``lib``'s compile time of one case in a new process (``_start.py``) whose cache folder is ``cache``."""
    env = dict(os.environ, **{"EMBER_CACHE_DIR" if lib == "ember" else "TORCHINDUCTOR_CACHE_DIR": cache})
    # A start reads the bytecode of the modules it imports from Python's cache, as an installed
    # package's does: without it each new process compiles the compiler's sources again (80 ms).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, os.path.join(os.path.dirname(__file__), "_start.py"), lib, name, str(args.threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])["compile"]
    except (IndexError, ValueError, KeyError):
        print(proc.stderr[-2000:], file=sys.stderr)
        return float("nan")


def models_main(args) -> None:
    import torch

    import ember

    print()
    print(f"{'case':<20} {'ember':>10} {'torch':>10} {'ratio':>6}   {'cold':>7} {'torch':>7} {'ratio':>6}   "
          f"{'warm':>7} {'of cold':>7}   {'eager':>10}")  # fmt: skip
    os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember-bench-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="torch-bench-")
    for name in MODEL_CASES:
        if not any(part in name for part in args.only.split(",")):
            continue
        rounds = args.rounds if not name.startswith("50") else max(args.rounds, 200)
        fn, eargs, emodel = _case(name, ember)
        ours = _stepper(ember, ember.compile(fn, backend="inductor"), eargs, emodel)
        eager_fn, eager_args, eager_model = _case(name, ember)
        eager = _stepper(ember, eager_fn, eager_args, eager_model)
        fn, targs, tmodel = _case(name, torch)
        theirs = _stepper(torch, torch.compile(fn, backend="inductor"), targs, tmodel)
        _first(ours), _first(theirs)
        our_time, their_time, eager_time = _interleaved([ours, theirs, eager], rounds)
        # Compiles in new processes, as a program starts: each library cold (an empty cache folder of its
        # own), then Ember warm (reading what its cold start wrote). In this process either library may
        # reuse what an earlier case compiled.
        own_cache, their_cache = (tempfile.mkdtemp(prefix=f"{lib}-bench-start-") for lib in ("ember", "torch"))
        cold = _new_process_compile(name, args, own_cache)
        # the median of three warm starts: one start's time moves by tens of milliseconds on this machine
        warm = statistics.median(_new_process_compile(name, args, own_cache) for _ in range(3))
        their_cold = _new_process_compile(name, args, their_cache, "torch")
        unit, scale = ("us", 1e6) if our_time < 1e-3 else ("ms", 1e3)
        print(
            f"{name:<20} {our_time * scale:>7.2f} {unit} {their_time * scale:>7.2f} {unit} "
            f"{our_time / their_time:>6.2f}   {cold:>5.2f} s {their_cold:>5.2f} s {cold / max(their_cold, 1e-9):>6.2f}   "
            f"{warm:>5.2f} s {warm / max(cold, 1e-9):>7.2f}   {eager_time * scale:>7.2f} {unit}",
            flush=True,
        )
    del ember
