"""``Tensor.new_*`` against PyTorch: dtype and device come from ``self`` unless given; nothing else does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool", "complex64")


def _source(lib, dtype: str):
    # A transposed, non-contiguous source: its layout must not carry over.
    return lib.ones((3, 2), dtype=getattr(lib, dtype)).t()


def _same(ours, theirs, values: bool = True) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert ours.device.type == theirs.device.type
    assert ours.requires_grad == theirs.requires_grad
    if values:
        theirs = theirs.float() if theirs.dtype == torch.bfloat16 else theirs
        ours = ours.float() if ours.dtype is ember.bfloat16 else ours
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


CALLS = [
    ("new_zeros(2, 3)", lambda t, lib: t.new_zeros(2, 3), True),
    ("new_zeros((2, 3))", lambda t, lib: t.new_zeros((2, 3)), True),
    ("new_zeros([])", lambda t, lib: t.new_zeros([]), True),
    ("new_ones([4])", lambda t, lib: t.new_ones([4]), True),
    ("new_ones(0, 2)", lambda t, lib: t.new_ones(0, 2), True),
    ("new_full((2, 2), 2.5)", lambda t, lib: t.new_full((2, 2), 2.5), True),
    ("new_full((2,), True)", lambda t, lib: t.new_full((2,), True), True),
    ("new_full((2,), 7, dtype=float64)", lambda t, lib: t.new_full((2,), 7, dtype=lib.float64), True),
    ("new_empty(2, 3)", lambda t, lib: t.new_empty(2, 3), False),
    ("new_empty((2, 3), dtype=int16)", lambda t, lib: t.new_empty((2, 3), dtype=lib.int16), False),
    ("new_empty_strided((2, 3), (1, 2))", lambda t, lib: t.new_empty_strided((2, 3), (1, 2)), False),
    ("new_tensor([1, 2])", lambda t, lib: t.new_tensor([1, 2]), True),
    ("new_tensor([[True], [False]])", lambda t, lib: t.new_tensor([[True], [False]]), True),
    ("new_tensor(3.75)", lambda t, lib: t.new_tensor(3.75), True),
    ("new_tensor([1.5], dtype=float64)", lambda t, lib: t.new_tensor([1.5], dtype=lib.float64), True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, call, values", CALLS, ids=[c[0] for c in CALLS])
def test_new_matches_pytorch(dtype: str, name: str, call, values: bool):
    theirs = call(_source(torch, dtype), torch)
    ours = call(_source(ember, dtype), ember)
    _same(ours, theirs, values)


def test_requires_grad_and_device():
    for lib in (ember, torch):
        src = lib.ones(2, dtype=lib.float32)
        assert src.new_ones(2, requires_grad=True).requires_grad
        assert src.new_tensor([1.0], requires_grad=True).requires_grad
        meta = src.new_zeros(2, 3, device="meta")
        assert meta.device.type == "meta" and tuple(meta.shape) == (2, 3)
        on_meta = lib.ones(2, device="meta").new_full((4,), 1.5)
        assert on_meta.device.type == "meta" and on_meta.dtype == lib.float32


def test_new_tensor_from_a_tensor_copies_and_warns():
    for lib in (ember, torch):
        data = lib.arange(3, dtype=lib.int32)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            copy = lib.ones(1, dtype=lib.float64).new_tensor(data)
        assert any("new_tensor" in str(w.message) for w in caught)
        assert copy.dtype == lib.float64
        data[0] = 7
        assert copy.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda t: t.new_ones(-1), RuntimeError),
        (lambda t: t.new_full(2, 1.0), TypeError),
        (lambda t: t.new_zeros(2.5), TypeError),
    ],
)
def test_new_errors(call, error):
    for lib in (ember, torch):
        with pytest.raises(error):
            call(lib.ones(2))
