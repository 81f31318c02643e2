"""The size ops (``aten::sym_size.int`` and friends) give what the tensor's attributes give."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.ops import aten


def _views():
    base = ember.tensor(np.arange(60, dtype=np.float32).reshape(3, 4, 5))
    return [base, base.transpose(0, 2), base[1:, ::2], base[2], ember.tensor(3.0)]


@pytest.mark.parametrize("t", _views(), ids=["contiguous", "transposed", "sliced", "offset", "0-d"])
def test_size_ops_read_the_metadata(t):
    for dim in range(-t.ndim, t.ndim):
        assert aten.sym_size.int(t, dim) == t.size(dim)
        assert aten.sym_stride.int(t, dim) == t.stride(dim)
    assert aten.sym_numel.default(t) == t.numel()
    assert aten.sym_storage_offset.default(t) == t.storage_offset()


def test_size_ops_match_pytorch_and_check_the_dim():
    torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
    t = torch.arange(60.0).reshape(3, 4, 5)[1:, ::2]
    e = ember.arange(60.0).reshape(3, 4, 5)[1:, ::2]
    for dim in range(-3, 3):
        assert aten.sym_size.int(e, dim) == torch.ops.aten.sym_size.int(t, dim)
        assert aten.sym_stride.int(e, dim) == torch.ops.aten.sym_stride.int(t, dim)
    assert aten.sym_numel.default(e) == torch.ops.aten.sym_numel.default(t)
    assert aten.sym_storage_offset.default(e) == torch.ops.aten.sym_storage_offset.default(t)
    with pytest.raises(IndexError, match="Dimension out of range"):
        aten.sym_size.int(e, 3)
    with pytest.raises(IndexError):
        torch.ops.aten.sym_size.int(t, 3)
