"""Backward on fakes: for the float samples of the core's OpInfo tables, ``loss.backward()`` through
the op on fakes gives each input a fake gradient with the real gradient's shape, dtype and strides
(the real Ember gradients are the reference; they are tested against PyTorch in their packages)."""

from __future__ import annotations

import importlib
import pathlib
import sys
import warnings

import numpy as np
import pytest

import ember
from ember._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
)

TESTS = pathlib.Path(__file__).resolve().parents[2] / "tensor" / "tests"
sys.path.insert(0, str(TESTS))
from opinfo import OpInfo, build  # noqa: E402

OPS: list[OpInfo] = [
    op
    for table in sorted(p.stem for p in TESTS.glob("opinfo_*.py"))
    for op in importlib.import_module(table).OPS
    if op.transforms and "float32" in op.dtypes
]

# Entries some samples of which cannot run on fakes, and the error they raise instead.
EXPECTED_ERRORS = {
    # The output shape depends on the values (a mask), forward or backward, as in PyTorch.
    **dict.fromkeys(("masked_select", "masked_scatter", "masked_scatter_"), DynamicOutputShapeException),
    **dict.fromkeys(("index_put", "aten.index.Tensor"), DynamicOutputShapeException),
    # index_fill's value gradient counts each index once: a unique() of the index, as in PyTorch.
    "index_fill": DynamicOutputShapeException,
    # The test calls read the results' values where indices may differ among ties.
    **dict.fromkeys(("sort", "topk", "kthvalue", "median_dim", "nanmedian_dim"), DataDependentOutputException),
    # The reflect, replicate and circular padding derivatives find their source indices by running the
    # forward on positions and reading them (.numpy()): shapes alone would do, but they read values.
    **dict.fromkeys(("nn.functional.pad", "nn.functional.pad_channels_last"), DataDependentOutputException),
    # The split positions are a tensor's values; the weighted degrees of freedom are checked on the host.
    **dict.fromkeys(("tensor_split_tensor", "cov_weighted"), DataDependentOutputException),
    # q is checked to lie in [0, 1], and the repeats are summed, on the host, as in PyTorch.
    **dict.fromkeys(("quantile_tensor_q", "repeat_interleave_tensor"), DataDependentOutputException),
}


def _leaves(value) -> list:
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _leaves(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v)]
    return []


def _loss(out):
    parts = [t for t in _leaves(out) if t.dtype.is_floating_point and t.grad_fn is not None]
    if not parts:
        return None
    total = parts[0].sum()
    for t in parts[1:]:
        total = total + t.sum()
    return total


def _fake(value, mode):
    if isinstance(value, ember.Tensor):
        return mode.from_tensor(value)
    if isinstance(value, list | tuple):
        return type(value)(_fake(v, mode) for v in value)
    if isinstance(value, dict):
        return {k: _fake(v, mode) for k, v in value.items()}
    return value


def _run(op, args, kwargs, mode=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode is None:
            loss = _loss(op.call(ember, *args, **kwargs))
            if loss is not None:
                loss.backward()
            return loss
        with mode:
            loss = _loss(op.call(ember, *args, **kwargs))
            if loss is not None:
                loss.backward()
            return loss


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name) for op in OPS])
def test_backward_on_fakes_matches_real(op: OpInfo):
    for sample in op.samples("float32", np.random.default_rng(1234)):
        args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
        inputs = [t for t in _leaves((args, kwargs)) if t.dtype.is_floating_point and t.is_leaf]
        for t in inputs:
            t.requires_grad_(True)
        try:
            real = _run(op, args, kwargs)
        except Exception:  # samples that fail for real (errors, ops without a derivative) are not ours
            continue
        if real is None:
            continue
        mode = FakeTensorMode()
        fakes = [mode.from_tensor(t) for t in inputs]
        fargs, fkwargs = _fake(args, mode), _fake(kwargs, mode)
        try:
            _run(op, fargs, fkwargs, mode)
        except Exception as error:
            if isinstance(error, EXPECTED_ERRORS.get(op.name, ())):
                continue
            raise AssertionError(f"{sample}: backward on fakes raised {error!r}") from error
        for t, f in zip(inputs, fakes, strict=True):
            if t.grad is None:
                assert f.grad is None, f"{sample}: a fake gradient where the real one is None"
                continue
            assert isinstance(f.grad, FakeTensor), f"{sample}: gradient {f.grad!r}"
            got = (tuple(f.grad.shape), f.grad.dtype, f.grad.stride(), f.grad.device)
            want = (tuple(t.grad.shape), t.grad.dtype, t.grad.stride(), t.grad.device)
            assert got == want, f"{sample}: fake gradient {got} vs real {want}"
