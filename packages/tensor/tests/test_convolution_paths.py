"""The forward convolution's two stride-1 plans against PyTorch: one GEMM over a stack of every tap
(the usual one) and, where that stack would pass ``_STACK_BYTES``, one GEMM per kernel row. The
convolution samples of ``opinfo_convolution`` run once more with the limit at zero, so that the
second plan sees every stride, padding, dilation, group and dtype the first one does."""

from __future__ import annotations

import opinfo_convolution
import pytest
from opinfo import ORACLE_MISSING, torch
from test_ops import assert_same, outcome, samples

import ember
from ember.core.families import convolution

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
FORWARD = [
    op for op in opinfo_convolution.OPS if op.name.startswith("nn.functional.conv") and "transpose" not in op.name
]


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("op", FORWARD, ids=[op.name for op in FORWARD])
def test_row_by_row_gemms_match_pytorch(op, dtype, monkeypatch):
    if dtype not in op.dtypes:
        pytest.skip(f"{op.name} has no {dtype} samples")
    monkeypatch.setattr(convolution, "_STACK_BYTES", 0)
    for sample in samples(op, dtype):
        theirs, their_error = outcome(op.call, torch, sample)
        ours, our_error = outcome(op.call, ember, sample)
        assert (our_error is None) == (their_error is None), f"{sample}: {our_error!r} vs {their_error!r}"
        if their_error is None:
            assert_same(ours, theirs, op, dtype, sample, check_strides=True)
