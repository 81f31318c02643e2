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
OPS: list[OpInfo] = [op for table in TABLES for op in importlib.import_module(table).OPS if "float64" in op.dtypes]
# Ops that draw random numbers: their gradients are compared in their own tests, from one draw.
RANDOM = {op.name for op in importlib.import_module("opinfo_random").OPS} if "opinfo_random" in TABLES else set()
# OpInfo entries whose gradients fail until their ops' derivatives are written (strict: an entry that
# passes must leave the list).
PENDING_GRAD = frozenset(
    {
        "F.batch_norm",
        "F.binary_cross_entropy",
        "F.binary_cross_entropy_with_logits",
        "F.cosine_similarity",
        "F.cross_entropy",
        "F.cross_entropy probabilities",
        "F.embedding",
        "F.embedding max_norm",
        "F.group_norm",
        "F.kl_div",
        "F.l1_loss",
        "F.layer_norm",
        "F.log_softmax",
        "F.mse_loss",
        "F.nll_loss",
        "F.normalize",
        "F.smooth_l1_loss",
        "F.softmax",
        "Tensor.matmul",
        "Tensor.repeat(*sizes)",
        "addmm",
        "amax",
        "amin",
        "aminmax",
        "baddbmm",
        "bmm",
        "cat",
        "cat(axis=)",
        "cat_channels_last",
        "column_stack",
        "concat(dim=)",
        "concatenate(axis=)",
        "cumprod",
        "cumsum",
        "dot",
        "dstack",
        "einsum",
        "flip",
        "fliplr",
        "flipud",
        "gather",
        "hstack",
        "index_add",
        "index_copy",
        "index_fill",
        "index_put",
        "index_select",
        "kthvalue",
        "log_softmax",
        "logsumexp",
        "masked_fill",
        "masked_scatter",
        "masked_scatter_",
        "masked_select",
        "matmul",
        "matmul_operator",
        "max_all",
        "max_dim",
        "mean",
        "median",
        "median_dim",
        "min_all",
        "mode",
        "msort",
        "mv",
        "nanmean",
        "nanmedian",
        "nanmedian_dim",
        "nansum",
        "nn.functional.adaptive_avg_pool2d",
        "nn.functional.avg_pool2d",
        "nn.functional.conv1d",
        "nn.functional.conv2d",
        "nn.functional.conv2d_channels_last",
        "nn.functional.conv_transpose2d",
        "nn.functional.interpolate",
        "nn.functional.linear",
        "nn.functional.max_pool2d",
        "nn.functional.pad",
        "nn.functional.pools_channels_last",
        "norm",
        "prod",
        "put",
        "roll",
        "scatter",
        "scatter_add",
        "scatter_reduce",
        "softmax",
        "sort",
        "stack",
        "stack_channels_last",
        "std",
        "std_mean",
        "take",
        "take_along_dim",
        "tile",
        "topk",
        "tril",
        "triu",
        "var",
        "var_mean",
        "vdot",
        "vector_norm",
        "vstack",
    }
)
_PENDING = pytest.mark.xfail(strict=True, reason="the derivative of an op it calls is not written yet")
CASES = [pytest.param(op, id=op.name) for op in OPS if op.name not in RANDOM]
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
        try:
            case = grad_case(op, sample)
        except Exception as error:
            if _torch_refuses(op, sample):
                continue
            raise AssertionError(f"{op.name} {sample}: {type(error).__name__}: {error}") from error
        if case is None:
            continue
        ours, theirs = case
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-7, equal_nan=True, err_msg=f"{op.name} {sample}")
        compared += 1
    if compared == 0:
        pytest.skip(f"{op.name}: no sample has a gradient")


@pytest.mark.parametrize("op", CASES)
def test_gradients_match_finite_differences(op: OpInfo):
    checked = 0
    for sample in _samples(op)[:6]:
        try:
            case = numerical_case(op, sample)
        except Exception:
            continue
        if case is None:
            continue
        for a, n in zip(*case, strict=True):
            np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-5, err_msg=f"{op.name} {sample}")
        checked += 1
    if checked == 0:
        pytest.skip(f"{op.name}: no small differentiable sample")


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
