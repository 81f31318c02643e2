"""``Tensor.data``: the same bytes outside autograd, and assignment that swaps a tensor's contents."""

from __future__ import annotations

import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

LIBS = [ember] if torch is None else [ember, torch]


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_data_shares_bytes_and_escapes_the_version_check(lib):
    x = lib.ones(3, requires_grad=True)
    y = (x * x).sum()  # saves x
    d = x.data
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == x.data_ptr()
    version = x._version
    d.mul_(3)
    assert x.tolist() == [3.0, 3.0, 3.0] and x._version == version
    y.backward()  # the change went through .data: autograd does not see it
    assert x.grad.tolist() == [6.0, 6.0, 6.0]


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_assigning_data_replaces_contents_and_shape_but_keeps_the_leaf(lib):
    x = lib.ones(3, requires_grad=True)
    x.data = lib.zeros(2, 2)
    assert tuple(x.shape) == (2, 2) and x.requires_grad and x.is_leaf
    assert x.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        x.data = lib.zeros(2, dtype=lib.long)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        x.data = 3
