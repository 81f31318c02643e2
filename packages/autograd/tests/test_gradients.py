"""Gradients of every op in every OpInfo table, in float64: against PyTorch and against finite differences."""

from __future__ import annotations

import importlib
import pathlib

import numpy as np
import pytest
from grad_harness import grad_case, numerical_case
from opinfo import ORACLE_MISSING, OpInfo, torch

TABLE_DIR = pathlib.Path(__file__).parents[2] / "tensor" / "tests"
TABLES = sorted(p.stem for p in TABLE_DIR.glob("opinfo_*.py"))
OPS: list[OpInfo] = [
    op for table in TABLES for op in importlib.import_module(table).OPS if "float64" in op.dtypes and op.transforms
]
# Ops that draw random numbers: their gradients are compared in their own tests, from one draw.
RANDOM = {op.name for op in importlib.import_module("opinfo_random").OPS} if "opinfo_random" in TABLES else set()
# OpInfo entries whose gradients fail until their ops' derivatives are written (strict: an entry that
# passes must leave the list).
PENDING_GRAD: frozenset[str] = frozenset()
_PENDING = pytest.mark.xfail(strict=True, reason="the derivative of an op it calls is not written yet")
# Ops whose gradient is by definition not the derivative of their forward: finite differences do not apply.
# max_norm rescales the weight in place, outside autograd, on every call (PyTorch's gradient ignores it).
NOT_DERIVATIVES = {"F.embedding max_norm"}
CASES = [pytest.param(op, id=op.name) for op in OPS if op.name not in RANDOM | NOT_DERIVATIVES]
ORACLE_CASES = [
    pytest.param(op, id=op.name, marks=[_PENDING] if op.name in PENDING_GRAD else [])
    for op in OPS
    if op.name not in RANDOM
]
needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _samples(op: OpInfo):
    return op.samples("float64", np.random.default_rng(1234))


@needs_torch
@pytest.mark.parametrize("op", ORACLE_CASES)
def test_gradients_match_pytorch(op: OpInfo):
    compared = 0
    for sample in _samples(op):
        if op.no_unique_gradient is not None and op.no_unique_gradient(sample):
            continue
        try:
            case = grad_case(op, sample)
        except Exception as error:
            if _torch_refuses(op, sample):
                continue
            raise AssertionError(f"{op.name} {sample}: {type(error).__name__}: {error}") from error
        if case is None:
            continue
        ours, theirs = case
        rtol, atol = _tolerance(op, sample)
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{op.name} {sample}")
        compared += 1
    if compared == 0:
        pytest.skip(f"{op.name}: no sample has a gradient")


@pytest.mark.parametrize("op", CASES)
def test_gradients_match_finite_differences(op: OpInfo):
    checked = 0
    for sample in _samples(op)[:6]:
        if op.no_unique_gradient is not None and op.no_unique_gradient(sample):
            continue
        try:
            case = numerical_case(op, sample)
        except Exception:
            continue
        if case is None:
            continue
        for a, n in zip(*case, strict=True):
            # Where the function is NaN nearby (a log of a negative target) differences say nothing.
            known = np.isfinite(n)
            np.testing.assert_allclose(a[known], n[known], rtol=1e-5, atol=1e-5, err_msg=f"{op.name} {sample}")
        checked += 1
    if checked == 0:
        pytest.skip(f"{op.name}: no small differentiable sample")


def _tolerance(op: OpInfo, sample) -> tuple[float, float]:
    """1e-7, or the op's forward tolerance where ``dtype=`` computes in a lower precision: a gradient
    that reads the result (prod's) inherits the forward's rounding differences. A sample computing in
    float32 differs from PyTorch by float32 roundings (exp and sums in another order), a few ulps."""
    target = sample.kwargs.get("dtype") if isinstance(sample.kwargs, dict) else None
    if isinstance(target, str) and target in op.tolerances:
        return max(op.tolerances[target][0], 1e-7), max(op.tolerances[target][1], 1e-7)
    if target == "float32":
        return 1e-5, 1e-5
    return 1e-7, 1e-7


def _torch_refuses(op: OpInfo, sample) -> bool:
    """PyTorch raises too: in the forward, or in the backward (ops whose derivative it does not define)."""
    from grad_harness import _run, outputs

    try:
        inputs, result = _run(op, torch, sample)
        outs = outputs(result, torch)
        if inputs and outs:
            torch.autograd.grad(outs, inputs, [torch.ones_like(o) for o in outs], allow_unused=True)
    except Exception:
        return True
    return False
