"""``ember.UntypedStorage``/``TypedStorage`` and the legacy storage classes against PyTorch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _pair(dtype: str):
    values = np.arange(12).reshape(3, 4) % 5
    return ember.tensor(values).to(getattr(ember, dtype)), torch.tensor(values).to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_untyped_storage_bytes_match(dtype):
    ours, theirs = _pair(dtype)
    a, b = ours.untyped_storage(), theirs.untyped_storage()
    assert a.nbytes() == b.nbytes() == a.size() == len(a)
    assert a.tolist() == b.tolist()
    assert a[3] == b[3] and a[-1] == b[-1]
    assert a[2:7].tolist() == b[2:7].tolist()
    assert a.element_size() == b.element_size() == 1
    assert a.data_ptr() == ours.data_ptr()


@pytest.mark.parametrize("dtype", DTYPES)
def test_typed_storage_elements_match(dtype):
    ours, theirs = _pair(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = ours.storage(), theirs.storage()
    assert a.size() == b.size() and len(a) == len(b)
    assert a.tolist() == b.tolist()
    assert a[5] == b[5]
    assert a.element_size() == b.element_size()
    assert ours.storage_type().__name__ == theirs.storage_type().__name__


def test_one_handle_per_storage_tells_sharing():
    x = ember.arange(12.0)
    assert x.view(3, 4).untyped_storage() is x.untyped_storage()
    assert x[4:].untyped_storage() is x.untyped_storage()
    assert x.clone().untyped_storage() is not x.untyped_storage()


def test_writes_through_the_storage_reach_the_tensor():
    x = ember.zeros(2, dtype=ember.uint8)
    version = x._version
    s = x.untyped_storage()
    s[1] = 7
    assert x.tolist() == [0, 7]
    s.fill_(3)
    assert x.tolist() == [3, 3]
    assert x._version > version  # autograd sees the change


def test_constructors_and_errors_match_pytorch():
    assert ember.UntypedStorage([1, 2, 255]).tolist() == torch.UntypedStorage([1, 2, 255]).tolist()
    assert ember.UntypedStorage(5).nbytes() == torch.UntypedStorage(5).nbytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.FloatStorage([1.5, 2]).tolist() == torch.FloatStorage([1.5, 2]).tolist()
        assert ember.LongStorage(3).size() == torch.LongStorage(3).size()
    with pytest.raises(IndexError):
        ember.UntypedStorage(3)[3]
    with pytest.raises(RuntimeError, match="not resizable"):
        ember.ones(2).untyped_storage().resize_(100)
    copy = ember.UntypedStorage([1, 2]).clone()
    assert copy.tolist() == [1, 2]
    from ember.storage import UntypedStorage

    assert UntypedStorage is ember.UntypedStorage


def test_typed_storage_warns_once_like_pytorch():
    from ember.core import warn_always

    warn_always._given.discard("TypedStorage")
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ember.ones(2).storage()
