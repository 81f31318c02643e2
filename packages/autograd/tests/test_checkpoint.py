"""``ember.utils.checkpoint`` against ``torch.utils.checkpoint``.

Random numbers differ between the libraries, so a program compares each library's checkpointed
run with its own plain run, and returns what must agree across them: whether values match, how
often the block ran, which errors and warnings came.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch
from test_function import data, outcome, same

import ember
import ember.utils.checkpoint

if torch is not None:
    import torch.utils.checkpoint

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def close(a, b) -> bool:
    return np.allclose(np.asarray(a.tolist()), np.asarray(b.tolist()), rtol=1e-12, atol=1e-12)


def block(lib, calls: list):
    """Saves several tensors, and draws random numbers (a dropout-like mask) between them."""

    def fn(x, w, *, scale=1.0):
        calls.append("start")
        h = (x * w).sin()
        mask = lib.rand(h.shape, dtype=h.dtype) < 0.5
        out = (h * mask * 2).exp() * scale
        calls.append("end")
        return out

    return fn


def run_and_compare(lib, use_reentrant, **kwargs):
    calls = []
    fn = block(lib, calls)
    x, w = data(lib, 16), data(lib, 16, seed=1)
    lib.manual_seed(7)
    ref = fn(x, w)
    gref = lib.autograd.grad(ref.sum(), (x, w))
    calls.clear()
    lib.manual_seed(7)
    y = lib.utils.checkpoint.checkpoint(fn, x, w, use_reentrant=use_reentrant, **kwargs)
    forward_calls = list(calls)
    y.sum().backward()
    return [close(y, ref), close(x.grad, gref[0]), close(w.grad, gref[1]), forward_calls, calls]


@needs_torch
@pytest.mark.parametrize("use_reentrant", [False, True])
def test_recomputation_replays_random_numbers(use_reentrant):
    same(lambda lib: run_and_compare(lib, use_reentrant))


@needs_torch
def test_early_stop_and_its_switch():
    same(lambda lib: run_and_compare(lib, False, early_stop=False))

    def switched(lib):
        with lib.utils.checkpoint.set_checkpoint_early_stop(False):
            return run_and_compare(lib, False)

    same(switched)


@needs_torch
def test_without_preserving_rng_the_recomputation_draws_anew():
    def program(lib):
        return run_and_compare(lib, False, preserve_rng_state=False)[:3]

    assert outcome(program, ember) == ("ok", [True, False, False])
    assert outcome(program, torch) == ("ok", [True, False, False])


@needs_torch
def test_default_is_reentrant_with_a_warning():
    def program(lib):
        x = data(lib, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = lib.utils.checkpoint.checkpoint(lambda a: a.sin(), x)
        return [w.category.__name__ for w in caught], type(y.grad_fn).__name__

    same(program)


@needs_torch
def test_autograd_grad_kwargs_and_argument_errors():
    def grad_non_reentrant(lib):
        x = data(lib, 3)
        y = lib.utils.checkpoint.checkpoint(lambda a, k=1: (a * k).sin() * a, x, use_reentrant=False, k=3)
        return lib.autograd.grad(y.sum(), x)

    def grad_reentrant(lib):
        x = data(lib, 3)
        y = lib.utils.checkpoint.checkpoint(lambda a: a.sin() * a, x, use_reentrant=True)
        return lib.autograd.grad(y.sum(), x)

    def kwargs_reentrant(lib):
        return lib.utils.checkpoint.checkpoint(lambda a, k: a, data(lib, 2), use_reentrant=True, k=1)

    def context_reentrant(lib):
        ctx = lib.utils.checkpoint.noop_context_fn
        return lib.utils.checkpoint.checkpoint(lambda a: a, data(lib, 2), use_reentrant=True, context_fn=lambda: ctx())

    def bad_check(lib):
        return lib.utils.checkpoint.checkpoint(lambda a: a, data(lib, 2), use_reentrant=False, determinism_check="x")

    def no_grad_output(lib):
        y = lib.utils.checkpoint.checkpoint(lambda a: a.detach() * 2, data(lib, 2), use_reentrant=True)
        return y.requires_grad

    for program in (grad_non_reentrant, grad_reentrant, kwargs_reentrant, context_reentrant, bad_check):
        same(program)
    same(no_grad_output)


@needs_torch
def test_retain_graph_recomputes_once_per_backward():
    def program(lib):
        calls = []

        def fn(a):
            calls.append(1)
            return a.sin().exp()

        x = data(lib, 3)
        y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        return len(calls), x.grad

    same(program)


@needs_torch
def test_nested_checkpoints():
    def program(lib):
        calls = []

        def inner(a):
            calls.append("inner")
            return a.sin() * a

        def outer(a):
            calls.append("outer")
            return lib.utils.checkpoint.checkpoint(inner, a.exp(), use_reentrant=False).cos()

        x = data(lib, 3)
        y = lib.utils.checkpoint.checkpoint(outer, x, use_reentrant=False)
        (g,) = lib.autograd.grad(y.sum(), x)
        return calls, g

    same(program)


@needs_torch
def test_non_deterministic_blocks_are_caught():
    def shape_changes(lib):
        sizes = iter([3, 2])

        def fn(a):
            return (a[: next(sizes)] * 2).exp().sum() * a

        x = data(lib, 3)
        y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
        return lib.autograd.grad(y.sum(), x)

    def fewer_saved(lib):
        first = [True]

        def fn(a):
            out = a.exp()
            if first.pop() if first else False:
                out = out.sin()
            return out

        x = data(lib, 3)
        y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, early_stop=False)
        return lib.autograd.grad(y.sum(), x)

    for program in (shape_changes, fewer_saved):
        expected, got = outcome(program, torch), outcome(program, ember)
        assert got[0] == expected[0] == "CheckpointError"
        # The first lines agree; after them PyTorch lists the tensors its ops save (Ember's ops may save
        # others) and appends tips about its debug mode and compiler.
        lines = got[1].split("\n")[:4]
        assert lines == expected[1].split("\n")[: len(lines)]


@needs_torch
def test_modified_input_is_caught():
    def program(lib):
        x = data(lib, 3)
        a = x * 1
        y = lib.utils.checkpoint.checkpoint(lambda t: t.sin(), a, use_reentrant=False)
        a.add_(1)
        return lib.autograd.grad(y.sum(), x)

    same(program)


@needs_torch
def test_checkpoint_sequential():
    def program(lib):
        x = data(lib, 4)
        funcs = [lambda t: t.sin(), lambda t: t * 3, lambda t: t.exp(), lambda t: t.cos(), lambda t: t + 1]
        plain = x
        for f in funcs:
            plain = f(plain)
        gref = lib.autograd.grad(plain.sum(), x)[0]
        y = lib.utils.checkpoint.checkpoint_sequential(funcs, 2, x, use_reentrant=False)
        g = lib.autograd.grad(y.sum(), x)[0]
        return y, g, close(y, plain), close(g, gref)

    def bad_kwarg(lib):
        return lib.utils.checkpoint.checkpoint_sequential([lambda t: t], 1, data(lib, 2), use_reentrant=False, k=1)

    same(program)
    same(bad_kwarg)


@needs_torch
def test_context_fn_wraps_forward_and_recomputation():
    def program(lib):
        log = []

        class Tag:
            def __init__(self, name):
                self.name = name

            def __enter__(self):
                log.append(self.name)

            def __exit__(self, *exc):
                log.append("/" + self.name)

        x = data(lib, 3)
        y = lib.utils.checkpoint.checkpoint(
            lambda a: a.sin().exp(), x, use_reentrant=False, context_fn=lambda: (Tag("fwd"), Tag("re"))
        )
        log.append("backward")
        y.sum().backward()
        return log, x.grad

    def debug_and_context(lib):
        ctx = lib.utils.checkpoint.noop_context_fn
        return lib.utils.checkpoint.checkpoint(
            lambda a: a, data(lib, 2), use_reentrant=False, debug=True, context_fn=lambda: ctx()
        )

    same(program)
    same(debug_and_context)
