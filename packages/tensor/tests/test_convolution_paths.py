"""The convolution kernel's plans against PyTorch.

The forward's two stride-1 plans: one GEMM over a stack of every tap (the usual one) and, where that
stack would pass ``_STACK_BYTES``, one GEMM per kernel row; the convolution samples of
``opinfo_convolution`` run once more with the limit at zero, so that the second plan sees every
stride, padding, dilation, group and dtype the first one does. And stride-1 transposed
convolutions, which run as the plain convolution they equal, with padding, dilation and groups."""

from __future__ import annotations

import numpy as np
import opinfo_convolution
import pytest
from opinfo import ORACLE_MISSING, TOLERANCES, torch
from test_ops import assert_same, outcome, samples

import ember
from ember.core.aten.nn import conv_grid

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
    monkeypatch.setattr(conv_grid, "_STACK_BYTES", 0)
    for sample in samples(op, dtype):
        theirs, their_error = outcome(op.call, torch, sample)
        ours, our_error = outcome(op.call, ember, sample)
        assert (our_error is None) == (their_error is None), f"{sample}: {our_error!r} vs {their_error!r}"
        if their_error is None:
            assert_same(ours, theirs, op, dtype, sample, check_strides=True)


TRANSPOSED = [  # (kwargs, input shape, weight shape): stride 1 runs as a plain convolution unless noted
    ({"padding": (1, 2)}, (2, 4, 6, 7), (4, 3, 3, 3)),
    ({"padding": 1, "dilation": (2, 1), "groups": 2}, (2, 4, 5, 6), (4, 3, 3, 2)),
    ({"padding": (0, 1), "dilation": 2}, (1, 6, 4, 4), (6, 2, 2, 2)),
    ({"padding": 2}, (1, 3, 6, 6), (3, 2, 3, 3)),  # padding past d*(k-1): the general plan
    ({"dilation": 2, "output_padding": 1}, (1, 2, 4, 4), (2, 3, 2, 2)),  # output padding: the general plan
]


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(TRANSPOSED)))
def test_unit_stride_transposed_convolution_matches_pytorch(case, dtype):
    kwargs, x_shape, w_shape = TRANSPOSED[case]
    rng = np.random.default_rng(case)
    x, w = rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype)
    bias = rng.standard_normal(w_shape[1] * kwargs.get("groups", 1)).astype(dtype)
    for args in ((x, w), (x, w, bias)):
        ours = ember.nn.functional.conv_transpose2d(*map(ember.from_numpy, args), **kwargs)
        theirs = torch.nn.functional.conv_transpose2d(*map(torch.from_numpy, args), **kwargs)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        rtol, atol = TOLERANCES[dtype]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=atol)


def test_three_dimensional_inputs_name_the_functions_that_compute_them():
    x, w = ember.ones(1, 2, 3, 3, 3), ember.ones(4, 2, 2, 2, 2)
    with pytest.raises(NotImplementedError, match=r"nn\.functional\.conv3d"):
        ember.ops.aten.convolution.default(x, w, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1)
    assert ember.convolution(x, w, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1).shape == (1, 4, 2, 2, 2)
