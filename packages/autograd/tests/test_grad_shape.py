"""Gradients of the shape, indexing and random families against PyTorch, beyond the OpInfo runs.

The view table (``opinfo_views``) is sampled in float32; here its samples run again in float64, so
that every view's gradient meets PyTorch's over every layout. The other tests are the special cases
the tables leave out: duplicate indices, accumulation, ``include_self=False``, negative dims, 0-d.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_harness import _run, grad_case
from opinfo import ORACLE_MISSING, T, torch

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _float64(value):
    if isinstance(value, T):
        return T(value.array.astype(np.float64), value.layout) if value.array.dtype == np.float32 else value
    if isinstance(value, list | tuple):
        return type(value)(_float64(v) for v in value)
    if isinstance(value, dict):
        return {k: _float64(v) for k, v in value.items()}
    return value


def _torch_refuses(op, sample) -> bool:
    try:
        _run(op, torch, sample)
    except Exception:
        return True
    return False


def _view_ops():
    import opinfo_views

    return [pytest.param(op, id=op.name) for op in opinfo_views.OPS if op.name not in ("view_dtype", "detach")]


@needs_torch
@pytest.mark.parametrize("op", _view_ops())
def test_view_gradients_match_pytorch(op):
    from opinfo import Sample

    compared = 0
    for sample in op.samples("float32", np.random.default_rng(0)):
        sample = Sample(_float64(sample.args), _float64(sample.kwargs), sample.name)
        try:
            case = grad_case(op, sample)
        except Exception:
            if _torch_refuses(op, sample):
                continue
            raise
        if case is None:
            continue
        for ours, theirs in zip(*case, strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12, err_msg=f"{op.name} {sample}")
        compared += 1
    assert compared
