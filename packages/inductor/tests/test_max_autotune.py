"""``mode="max-autotune"``: the C++ GEMM template against a float64 reference, and GEMMs chosen by measurement."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from inductor_testing import compile_with_inductor

import ember
import ember.nn as nn
from ember.core import dtypes as D
from ember.inductor import autotune, config, cpp_builder
from ember.inductor.gemm_template import (
    GemmConfig,
    GemmKernel,
    GemmProblem,
    Operand,
    configs_for,
    gemm_module,
    gemm_source,
)
from ember.inductor.ir import ExternBuffer

# -- the template, called directly ----------------------------------------------------------------


def _operand(rng, rows, cols, batch, transposed, pad, dtype):
    """A (batch, rows, cols) operand stored transposed or not, ``pad`` elements into its buffer."""
    shape = (batch, cols, rows) if transposed else (batch, rows, cols)
    values = rng.standard_normal(pad + int(np.prod(shape)))
    buf = np.ascontiguousarray(values)
    logical = values[pad:].reshape(shape)
    logical = logical.transpose(0, 2, 1) if transposed else logical
    strides = tuple(s // 8 for s in logical.strides)
    strides = tuple(0 if n == 1 else s for s, n in zip(strides, logical.shape, strict=True))
    opnd = Operand((buf.size,), (1,), pad, strides)
    return opnd, ember.tensor(buf).to(dtype), logical


def _problem_cases():
    """(op, batch, M, N, K, A transposed, B transposed, bias kind, alpha, beta)."""
    yield from [
        ("mm", 1, 1, 1, 1, False, False, None, 1, 1),
        ("mm", 1, 1, 17, 5, False, False, None, 1, 1),
        ("mm", 1, 7, 1, 3, False, True, None, 1, 1),
        ("mm", 1, 5, 7, 1, False, False, None, 1, 1),  # K = 1
        ("mm", 1, 13, 29, 37, True, False, None, 1, 1),  # odd sizes, A transposed
        ("mm", 1, 100, 23, 10, True, True, None, 1, 1),  # M over the row block, both transposed
        ("mm", 1, 3, 530, 400, False, True, None, 1, 1),  # K over the depth block, N over the column block
        ("mm", 1, 4, 6, 0, False, False, None, 1, 1),  # K = 0: zeros
        ("addmm", 1, 9, 19, 11, False, True, "row", 1, 1),
        ("addmm", 1, 9, 19, 11, False, False, "full", 0.5, 2.0),
        ("addmm", 1, 6, 18, 300, False, False, "column", 1, 1),
        ("addmm", 1, 9, 19, 11, False, False, "nan", 1, 0),  # beta = 0 ignores the NaN in the bias
        ("addmm", 1, 5, 3, 0, False, False, "row", 1, 3.0),  # K = 0: beta * bias
        ("bmm", 3, 5, 18, 7, False, True, None, 1, 1),
        ("bmm", 2, 1, 1, 33, True, False, None, 1, 1),
    ]


_CASES = list(_problem_cases())


def _bias(rng, kind, m, n, dtype):
    if kind is None:
        return None
    if kind == "row":
        values = rng.standard_normal(n)
        return Operand((n,), (1,), 0, (0, 0, 1)), ember.tensor(values).to(dtype), values[None, None, :]
    if kind == "column":
        values = rng.standard_normal((m, 1))
        return Operand((m, 1), (1, 1), 0, (0, 1, 0)), ember.tensor(values).to(dtype), values[None]
    values = rng.standard_normal((m, n))
    if kind == "nan":
        values[0, 0] = values[-1, -1] = np.nan
    return Operand((m, n), (n, 1), 0, (0, n, 1)), ember.tensor(values).to(dtype), values[None]


@pytest.mark.parametrize("dtype", [D.float32, D.float64], ids=["float32", "float64"])
def test_every_blocking_matches_a_float64_reference(dtype):
    rng = np.random.default_rng(0)
    cases, sources = [], []
    # float64 shares the code of float32 but its vector width: a few cases that cross tile and block edges
    cases_of_dtype = list(_problem_cases()) if dtype == D.float32 else [_CASES[i] for i in (1, 4, 6, 9, 11, 13)]
    for ci, case in enumerate(cases_of_dtype):
        op, batch, m, n, k, ta, tb, bias_kind, alpha, beta = case
        a = _operand(rng, m, k, batch, ta, 3, dtype)
        b = _operand(rng, k, n, batch, tb, 5, dtype)
        bias = _bias(rng, bias_kind, m, n, dtype)
        problem = GemmProblem(op, dtype, batch, m, n, k, a[0], b[0], bias[0] if bias else None, alpha, beta)
        want = alpha * np.matmul(a[2], b[2])
        if bias is not None and beta != 0:
            want = want + beta * bias[2]
        want = want if op == "bmm" else want[0]
        # every case under blocks small enough that these sizes cross every block edge (M, N and K
        # blocks); the real blockings (each C++ function costs compile time) under the cases that
        # cross their tile and block edges
        configs = [GemmConfig(4, 8, 8, 16, 32)]
        if dtype == D.float64 or ci in (0, 3, 4, 5, 6, 8, 11, 13):
            configs += configs_for(dtype)
        for gi, cfg in enumerate(configs):
            name = f"gemm_case{ci}_cfg{gi}"
            sources.append(gemm_source(name, problem, cfg))
            inputs = [a[1], b[1]] + ([bias[1]] if bias else [])
            cases.append((case, cfg, GemmKernel(problem, cfg, name), inputs, want))
    lib = cpp_builder.load(gemm_module(sources))
    tol = 2e-5 if dtype == D.float32 else 1e-12
    for case, cfg, kernel, inputs, want in cases:
        got = kernel.load(lib)(*inputs)
        assert got.dtype == dtype and tuple(got.shape) == want.shape, (case, cfg)
        got = got.to(D.float64).numpy()
        scale = max(1.0, np.sqrt(case[4]))  # rounding grows with K
        np.testing.assert_allclose(got, want, rtol=tol * scale, atol=tol * scale, err_msg=f"{case} {cfg}")
        assert not np.isnan(got).any(), (case, cfg)


def test_kernel_copies_a_buffer_of_other_strides_and_refuses_other_sizes():
    rng = np.random.default_rng(1)
    a = _operand(rng, 4, 3, 1, False, 0, D.float32)
    b = _operand(rng, 3, 5, 1, False, 0, D.float32)
    problem = GemmProblem("mm", D.float32, 1, 4, 5, 3, a[0], b[0])
    kernel = GemmKernel(problem, configs_for(D.float32)[0]).load()
    want = kernel(a[1], b[1])
    strided = ember.zeros(30)[::2]  # stride 2, not the 1 the kernel was built for: copied to its layout
    strided.copy_(b[1])
    assert ember.equal(kernel(a[1], strided), want)
    with pytest.raises(RuntimeError, match="generated for an input of sizes"):
        kernel(a[1], ember.zeros(16))


# -- autotuning ------------------------------------------------------------------------------------


@pytest.fixture
def tuning(monkeypatch, tmp_path):
    """A fresh autotune cache in a temporary folder (kernels keep their cache), and a small budget."""
    monkeypatch.setattr(autotune, "cache_folder", lambda: str(tmp_path))
    monkeypatch.setattr(config, "max_autotune_gemm_budget", 5.0)
    monkeypatch.setattr(config, "max_autotune_gemm_runs", 1)
    autotune.clear_memo()
    yield tmp_path
    autotune.clear_memo()


def _gemm_kernels(rec):
    # an extern step of the generated wrapper holds its op; one of the step wrapper holds its buffer
    ops = [s.buf.op if isinstance(getattr(s, "buf", None), ExternBuffer) else getattr(s, "op", None)
           for g in rec.graphs for s in g.steps]  # fmt: skip
    return [op for op in ops if isinstance(op, GemmKernel)]


def test_linear_under_max_autotune_uses_the_template_through_the_weights_strides(tuning, monkeypatch):
    monkeypatch.setattr(config, "max_autotune", True)
    monkeypatch.setattr(config, "max_autotune_gemm_backends", "CPP")  # only the template: it must win
    x, w, bias = ember.randn(5, 7), ember.randn(9, 7), ember.randn(9)
    compiled, rec = compile_with_inductor(lambda x, w, b: ember.nn.functional.linear(x, w, b).relu())
    got = compiled(x, w, bias)
    want = (x.to(D.float64) @ w.to(D.float64).t() + bias.to(D.float64)).relu()
    np.testing.assert_allclose(got.to(D.float64).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    kernels = _gemm_kernels(rec)
    assert len(kernels) == 1
    p = kernels[0].problem
    assert p.op == "addmm" and (p.m, p.n, p.k) == (5, 9, 7)
    assert p.b.strides[1:] == (1, 7)  # w.t() read in place: the weight was not copied


def test_mlp_under_max_autotune_equals_eager_forward_and_backward(tuning, monkeypatch):
    # only the template, in one blocking (the others are held to the reference above): it runs every GEMM
    monkeypatch.setattr(config, "max_autotune_gemm_backends", "CPP")
    monkeypatch.setattr(autotune, "configs_for", lambda dtype: configs_for(dtype)[:1])
    calls, call = [], GemmKernel.__call__
    monkeypatch.setattr(GemmKernel, "__call__", lambda self, *ts: calls.append(self.problem.op) or call(self, *ts))
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 20), nn.GELU(), nn.Linear(20, 6))
    x = ember.randn(8, 12)
    want = model(x)
    want.sum().backward()
    want_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = ember.compile(model, mode="max-autotune")
    got = compiled(x)
    got.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    for p, g in zip(model.parameters(), want_grads, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), g.numpy(), rtol=1e-4, atol=1e-5)
    assert autotune.stats["measured"] > 0
    assert {"addmm", "mm"} <= set(calls)  # the forward's and the backward's GEMMs ran in the template
    assert config.max_autotune is False  # the mode turns it on only while compiling


def test_bmm_and_mm_of_a_computed_operand(tuning, monkeypatch):
    monkeypatch.setattr(config, "max_autotune", True)
    monkeypatch.setattr(config, "max_autotune_gemm_backends", "CPP")
    a, b, c = ember.randn(3, 4, 6, dtype=D.float64), ember.randn(3, 6, 5, dtype=D.float64), ember.randn(5, 2)
    compiled, rec = compile_with_inductor(lambda a, b, c: ember.bmm(a.exp(), b).sum(0) @ c.to(D.float64))
    got = compiled(a, b, c)
    want = ember.bmm(a.exp(), b).sum(0) @ c.to(D.float64)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    assert {k.problem.op for k in _gemm_kernels(rec)} == {"bmm", "mm"}


def test_the_choice_is_cached_on_disk_and_a_warm_start_does_not_measure(tuning, monkeypatch):
    monkeypatch.setattr(config, "max_autotune", True)
    fn = lambda a, b: a @ b  # noqa: E731
    a, b = ember.randn(16, 24), ember.randn(24, 8)
    compiled, _ = compile_with_inductor(fn)
    first = compiled(a, b)
    measured = autotune.stats["measured"]
    assert list(tuning.glob("*.json"))
    autotune.clear_memo()  # as a new process: only the disk copy is left
    cached = autotune.stats["from_cache"]
    compiled, _ = compile_with_inductor(fn)
    np.testing.assert_allclose(compiled(a, b).numpy(), first.numpy(), rtol=1e-5, atol=1e-6)
    assert autotune.stats["measured"] == measured
    assert autotune.stats["from_cache"] == cached + 1


def test_every_choice_is_logged_with_its_timings(tuning, monkeypatch, caplog):
    monkeypatch.setattr(config, "max_autotune", True)
    ember.logs.set_logs(kernel_choice=True)
    try:
        with caplog.at_level(logging.INFO):
            compiled, _ = compile_with_inductor(lambda a, b: a @ b)
            compiled(ember.randn(6, 5), ember.randn(5, 4))
    finally:
        ember.logs.set_logs()
    text = "\n".join(r.getMessage() for r in caplog.records if "chose" in r.getMessage())
    assert "mm 6x4x5" in text
    names = autotune.candidates(_any_problem())
    measured = [n for n in names if f"{n}: " in text and " ms" in text]
    assert "extern_mm" in text and measured, text


def _any_problem():
    o = Operand((1,), (1,), 0, (0, 0, 0))
    return GemmProblem("mm", D.float32, 1, 1, 1, 1, o, o)


def test_a_spent_budget_skips_the_candidates_not_yet_measured(tuning, monkeypatch):
    monkeypatch.setattr(config, "max_autotune_gemm_budget", 0.0)
    problem = _any_problem()
    choice = autotune.select(problem, lambda a, b: a @ b, [(1, 1), (1, 1)])
    names = autotune.candidates(problem)
    assert list(choice.timings) == names[:1] and choice.skipped == names[1:]
    assert choice.name == names[0]


def test_backends_setting(monkeypatch):
    monkeypatch.setattr(config, "max_autotune_gemm_backends", "ATEN")
    assert autotune.candidates(_any_problem()) == ["extern_mm"]
    monkeypatch.setattr(config, "max_autotune_gemm_backends", "TRITON")
    with pytest.raises(ValueError, match="no backend for the CPU"):
        autotune.candidates(_any_problem())
    monkeypatch.setattr(config, "max_autotune_gemm_backends", "ATEN,BOGUS")
    with pytest.raises(ValueError, match="BOGUS"):
        autotune.candidates(_any_problem())


@pytest.mark.parametrize("dtype", [D.int64, D.float16])
def test_dtypes_without_a_template_stay_extern_calls(tuning, monkeypatch, dtype):
    monkeypatch.setattr(config, "max_autotune", True)
    a, b = ember.arange(6, dtype=dtype).reshape(2, 3), ember.arange(12, dtype=dtype).reshape(3, 4)
    compiled, rec = compile_with_inductor(lambda a, b: a @ b)
    assert ember.equal(compiled(a, b), a @ b)
    assert not _gemm_kernels(rec)
    assert any("float32 and float64" in reason for _, reason in rec.graphs[0].fallbacks)


def test_gemms_over_symbolic_sizes_stay_extern_calls(tuning):
    before = len(autotune.history)
    compiled = ember.compile(lambda a, b: (a @ b).relu(), mode="max-autotune", dynamic=True)
    for rows in (3, 5):
        a, b = ember.randn(rows, 4), ember.randn(4, 6)
        np.testing.assert_allclose(compiled(a, b).numpy(), (a @ b).relu().numpy(), rtol=1e-6, atol=1e-6)
    assert len(autotune.history) == before  # nothing tuned: the template is built per size


def test_options_max_autotune_is_the_mode(tuning):
    before = len(autotune.history)
    compiled = ember.compile(lambda a, b: a @ b, options={"max_autotune": True})
    a, b = ember.randn(4, 3), ember.randn(3, 2)
    np.testing.assert_allclose(compiled(a, b).numpy(), (a @ b).numpy(), rtol=1e-6, atol=1e-6)
    assert [(p.op, p.m, p.n, p.k) for p, _ in autotune.history[before:]] == [("mm", 4, 2, 3)]


def test_compiled_addmm_with_beta_zero_ignores_a_nan_bias(tuning, monkeypatch):
    monkeypatch.setattr(config, "max_autotune", True)
    monkeypatch.setattr(config, "max_autotune_gemm_backends", "CPP")
    bias = ember.tensor([1.0, float("nan"), 2.0])
    a, b = ember.randn(4, 5), ember.randn(5, 3)
    compiled, rec = compile_with_inductor(lambda c, a, b: ember.addmm(c, a, b, beta=0, alpha=2.0))
    got = compiled(bias, a, b)
    want = 2.0 * (a.to(D.float64).numpy() @ b.to(D.float64).numpy())
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    assert [k.problem.beta for k in _gemm_kernels(rec)] == [0]
