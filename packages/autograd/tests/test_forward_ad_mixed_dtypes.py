"""Forward AD where dual floating-point tensors meet integer and boolean tensors, against PyTorch.

An integer tensor is data with a zero tangent when it is an operand (``x + ints``, ``cat``,
``copy_``), and part of the linear map when it is an index (``scatter``'s). The rules that apply an
op to the tangents must tell the two apart.
"""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

X = np.array([[0.3, -1.2, 2.0], [0.7, 1.1, -0.4]])
V = np.array([[1.0, 0.5, -0.25], [-2.0, 0.1, 0.3]])
INTS = np.array([[5, -6, 7], [2, 0, 9]])
INDEX = np.array([[1, 0, 1]])


CASES = {
    "add": lambda lib, d, i: d + i,
    "radd": lambda lib, d, i: i + d,
    "sub": lambda lib, d, i: d - i,
    "rsub": lambda lib, d, i: i - d,
    "add alpha": lambda lib, d, i: lib.add(d, i, alpha=3),
    "add bool": lambda lib, d, i: d + (i > 4),
    "mul": lambda lib, d, i: d * i,
    "cat": lambda lib, d, i: lib.cat([d, i]),
    "stack": lambda lib, d, i: lib.stack([i, d], 1),
    "where": lambda lib, d, i: lib.where(i > 4, d, i),
    "copy_ into dual": lambda lib, d, i: d.clone().copy_(i),
    "add_ into dual": lambda lib, d, i: d.clone().add_(i),
    "scatter index": lambda lib, d, i: d.scatter(0, lib.tensor(INDEX), d[:1] * 2),
}


def _tangent(lib, name: str) -> np.ndarray:
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(lib.tensor(X, dtype=lib.float64), lib.tensor(V, dtype=lib.float64))
        out = CASES[name](lib, d, lib.tensor(INTS))
        tangent = fw.unpack_dual(out).tangent
        return np.zeros(tuple(out.shape)) if tangent is None else tangent.numpy()


@needs_torch
@pytest.mark.parametrize("name", list(CASES))
def test_integer_operands_have_zero_tangents(name):
    np.testing.assert_allclose(_tangent(ember, name), _tangent(torch, name), rtol=1e-12, atol=1e-12)
