"""Compiled optimizer steps (``ember.compile(opt.step)``), in-place input updates, horizontal fusion.

A compiled step must leave parameters and state as eager's steps do, update them in place (the same
tensors, the same memory), run as a few kernels rather than one per parameter, and compile once.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from inductor_testing import assert_same, compile_with_inductor

import ember
import ember.nn as nn
from ember.dynamo.testing import CompileCounterWithBackend
from ember.inductor import config

SHAPES = [(8, 6), (6,), (4, 3, 2)]
STEPS = 20

CONFIGS = {
    "sgd_momentum_nesterov_wd_foreach": (ember.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True,
                                                               weight_decay=0.1, foreach=True)),
    "sgd_momentum_dampening_loop": (ember.optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.2, foreach=False)),
    "sgd_plain_wd_maximize": (ember.optim.SGD, dict(lr=0.05, weight_decay=0.1, maximize=True)),
    "adam_loop": (ember.optim.Adam, dict(lr=0.01, foreach=False)),
    "adam_amsgrad_wd_foreach": (ember.optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1, foreach=True)),
    "adamw_foreach": (ember.optim.AdamW, dict(lr=0.01, foreach=True)),
    "adamw_amsgrad_loop": (ember.optim.AdamW, dict(lr=0.01, amsgrad=True, foreach=False)),
}  # fmt: skip


def make_params(dtype=ember.float32, shapes=SHAPES, seed=0):
    ember.manual_seed(seed)
    return [nn.Parameter(ember.randn(*s, dtype=dtype)) for s in shapes]


def grads_for(shapes=SHAPES, steps=STEPS, seed=1):
    ember.manual_seed(seed)
    return [[ember.randn(*s) for s in shapes] for _ in range(steps)]


def run_steps(params, opt, step, grads):
    for gs in grads:
        for p, g in zip(params, gs, strict=True):
            p.grad = g.to(p.dtype)
        step()


def _max_err(a, b):
    return max(float((x.detach().double() - y.detach().double()).abs().max()) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_compiled_steps_match_eager(name):
    cls, kwargs = CONFIGS[name]
    grads = grads_for()
    eager, compiled, exact = make_params(), make_params(), make_params(ember.float64)
    eager_opt, compiled_opt, exact_opt = cls(eager, **kwargs), cls(compiled, **kwargs), cls(exact, **kwargs)
    run_steps(eager, eager_opt, eager_opt.step, grads)
    run_steps(exact, exact_opt, exact_opt.step, grads)
    before = [p.data_ptr() for p in compiled]
    counter = CompileCounterWithBackend("inductor")
    run_steps(compiled, compiled_opt, ember.compile(compiled_opt.step, backend=counter), grads)
    # in place: the same parameter memory
    assert [p.data_ptr() for p in compiled] == before
    # float32 compiled vs float32 eager; and no further from float64 than eager is (bias corrections are
    # tensors in the compiled step, Python floats in eager: the roundings differ, not the accuracy)
    assert _max_err(compiled, eager) < 1e-5
    assert _max_err(compiled, exact) <= 2 * _max_err(eager, exact) + 1e-6
    # state after the compiled steps: eager's (step counts exactly)
    want, got = eager_opt.state_dict(), compiled_opt.state_dict()
    assert got["param_groups"] == want["param_groups"]
    assert sorted(got["state"]) == sorted(want["state"])
    for i, state in want["state"].items():
        assert sorted(got["state"][i]) == sorted(state)
        for key, value in state.items():
            if key == "step":
                assert float(got["state"][i][key]) == float(value) == STEPS
            else:
                assert_same(got["state"][i][key], value, rtol=1e-5, atol=1e-5)
    # Adam's state is created when capture first sees the optimizer: one graph for every step. SGD's momentum
    # buffer is a copy of the first gradient, made by the first step's graph: the second step, which finds
    # the buffers, compiles once more, and no step after it does.
    lazily_created = cls is ember.optim.SGD and kwargs.get("momentum", 0) != 0
    assert counter.frame_count == (2 if lazily_created else 1)


def _kernel_counts(monkeypatch, n_params):
    compile_fx_module = sys.modules["ember.inductor.compile_fx"]
    graphs = []
    inner = compile_fx_module.compile_fx_inner

    def recording(gm, example_inputs):
        graphs.append(inner(gm, example_inputs))
        return graphs[-1]

    monkeypatch.setattr(compile_fx_module, "compile_fx_inner", recording)
    shapes = [(16, 8) if i % 2 == 0 else (8,) for i in range(n_params)]
    params = make_params(shapes=shapes)
    opt = ember.optim.AdamW(params, lr=0.01, foreach=True)
    grads = grads_for(shapes, steps=2)
    run_steps(params, opt, ember.compile(opt.step), grads)
    eager = make_params(shapes=shapes)
    eager_opt = ember.optim.AdamW(eager, lr=0.01, foreach=True)
    run_steps(eager, eager_opt, eager_opt.step, grads)
    assert _max_err(params, eager) < 1e-5
    return graphs


def test_step_over_100_parameters_is_few_kernels(monkeypatch):
    graphs = _kernel_counts(monkeypatch, 100)
    assert len(graphs) == 1
    # one kernel per parameter (let alone per op) would be 100 or more: the updates are fused
    assert graphs[0].kernel_count <= 2
    assert not graphs[0].fallbacks


# -- in-place updates of graph inputs --------------------------------------------------------------


def test_input_mutations_are_stored_in_place():
    """A parameter update that reads moments updated in the same step: the moments' in-place stores
    must wait for the update that reads their old values."""

    def step(p, m, g):
        m.mul_(0.9).add_(g)
        p.add_(m, alpha=-0.1)

    ember.manual_seed(0)
    p, m, g = ember.randn(32, 16), ember.randn(32, 16), ember.randn(32, 16)
    want_p, want_m = p.clone(), m.clone()
    step(want_p, want_m, g)
    ptrs = (p.data_ptr(), m.data_ptr())
    compiled = ember.compile(step)
    with ember.no_grad():
        compiled(p, m, g)
    assert (p.data_ptr(), m.data_ptr()) == ptrs
    assert_same(p, want_p)
    assert_same(m, want_m)


def test_outputs_read_the_value_before_the_mutation():
    def f(x):
        y = x * 2  # the old x
        x.add_(1)
        return y, x * 3  # and the new one

    x = ember.ones(3)
    with ember.no_grad():
        y, z = ember.compile(f)(x)
    assert x.tolist() == [2.0] * 3 and y.tolist() == [2.0] * 3 and z.tolist() == [6.0] * 3


def test_mutation_the_code_generator_cannot_lower_still_happens():
    def f(x, y):
        x.add_(y)
        return y * 2

    x, y = ember.ones(3, dtype=ember.complex64), ember.ones(3, dtype=ember.complex64)
    with ember.no_grad():
        out = ember.compile(f)(x, y)  # complex: extern calls, the copy_ included
    assert x.tolist() == [2 + 0j] * 3 and out.tolist() == [2 + 0j] * 3


def test_mutations_that_read_each_other():
    """``a`` and ``b`` each updated from the other's old value: one goes through a temporary."""

    def swap_ish(a, b):
        new_a = a + 2 * b
        b.copy_(a - b)
        a.copy_(new_a)

    ember.manual_seed(0)
    a, b = ember.randn(10, 7), ember.randn(10, 7)
    wa, wb = a.clone(), b.clone()
    swap_ish(wa, wb)
    ember.compile(swap_ish)(a, b)
    assert_same(a, wa)
    assert_same(b, wb)


# -- horizontal fusion -----------------------------------------------------------------------------


def _separate_kernels(monkeypatch):
    monkeypatch.setattr(config, "combo_kernels", False)  # count the fused groups, one kernel each


def test_independent_reductions_over_the_same_range_share_a_kernel(monkeypatch):
    _separate_kernels(monkeypatch)
    ember.manual_seed(0)
    a, b, c = ember.randn(64, 32), ember.randn(64, 32), ember.randn(5, 7)
    fn = lambda a, b, c: (a.sum(-1), c * 2, b.amax(-1))  # noqa: E731
    compiled, rec = compile_with_inductor(fn)
    got = compiled(a, b, c)
    for x, y in zip(got, fn(a, b, c), strict=True):
        assert_same(x, y)
    # the two reductions over 64 rows in one loop nest, the 5x7 loop on its own: two kernels, not three
    assert rec.graphs[0].kernel_count == 2


def test_independent_pointwise_loops_share_a_kernel(monkeypatch):
    _separate_kernels(monkeypatch)
    ember.manual_seed(0)
    a, b, c = ember.randn(48, 16), ember.randn(48, 16), ember.randn(3, 5)
    fn = lambda a, b, c: (a.exp(), c.sum(), b * 3)  # noqa: E731
    compiled, rec = compile_with_inductor(fn)
    for x, y in zip(compiled(a, b, c), fn(a, b, c), strict=True):
        assert_same(x, y)
    assert rec.graphs[0].kernel_count == 2


def test_dependent_loop_is_not_moved_before_its_producer(monkeypatch):
    _separate_kernels(monkeypatch)
    ember.manual_seed(0)
    a, c = ember.randn(64, 32), ember.randn(5, 7)
    fn = lambda a, c: (a.sum(-1), c.sum(), a * c.sum())  # noqa: E731  (the last reads the 5x7 sum)
    compiled, rec = compile_with_inductor(fn)
    for x, y in zip(compiled(a, c), fn(a, c), strict=True):
        assert_same(x, y, rtol=1e-5, atol=1e-4)
    assert rec.graphs[0].kernel_count == 3


def test_combo_kernel_runs_groups_of_different_ranges_in_one_call():
    ember.manual_seed(0)
    a, c = ember.randn(64, 32), ember.randn(5, 7)
    fn = lambda a, c: (a.sum(-1), c.sum(), a * c.sum())  # noqa: E731
    compiled, rec = compile_with_inductor(fn)
    for x, y in zip(compiled(a, c), fn(a, c), strict=True):
        assert_same(x, y, rtol=1e-5, atol=1e-4)
    assert rec.graphs[0].kernel_count == 1
    np.testing.assert_equal(rec.graphs[0].source.count('extern "C" int kernel0_'), 3)
