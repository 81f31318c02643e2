"""Helpers the code generator's tests share: compile through AOT autograd, compare with eager."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

import ember
from ember.aot.aot_autograd import aot_function
from ember.aot.backends import core_decompositions
from ember.inductor.compile_fx import compile_fx_inner


class Recorder:
    """Compiles with ``compile_fx_inner`` and keeps each compiled graph (forward, then backward)."""

    def __init__(self) -> None:
        self.graphs: list = []

    def __call__(self, gm, example_inputs):
        compiled = compile_fx_inner(gm, example_inputs)
        self.graphs.append(compiled)
        return compiled


def compile_with_inductor(fn):
    rec = Recorder()
    return aot_function(fn, fw_compiler=rec, bw_compiler=rec, decompositions=core_decompositions()), rec


def assert_same(got, want, rtol=1e-5, atol=1e-5, check_strides=True):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    if check_strides:
        a = [s for s, n in zip(got.stride(), got.shape, strict=True) if n != 1]
        b = [s for s, n in zip(want.stride(), want.shape, strict=True) if n != 1]
        assert a == b, (got.stride(), want.stride())
    if got.dtype.is_floating_point:
        got, want = got.detach().to(ember.float64), want.detach().to(ember.float64)
    g, w = got.detach().numpy(), want.detach().numpy()
    if g.dtype.kind in "fc":
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def run_in_new_process(code: str, cache_dir) -> dict:
    """``code`` run by a new Python process whose cache folder is ``cache_dir`` (a cold or a warm
    start); the JSON object its last printed line holds."""
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
