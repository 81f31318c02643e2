"""``out=`` corner cases of cat, stack and tril/triu against PyTorch: casts, overlap, aliasing, devices."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _both(fn):
    """fn(lib) in each library: (result or error type) for torch, then for ember."""
    outcomes = []
    for lib in (torch, ember):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcomes.append(fn(lib))
        except Exception as error:  # compared below
            outcomes.append(type(error))
    return outcomes


def _values(t):
    return t.float().tolist() if str(t.dtype).endswith("bfloat16") else t.tolist()


CASES = {
    "cat into a wider dtype": lambda lib: lib.cat(
        [lib.ones(2, dtype=lib.int32), lib.zeros(1, dtype=lib.bool)], out=lib.empty(0, dtype=lib.float64)
    ),
    "cat into a narrower dtype": lambda lib: lib.cat([lib.ones(2), lib.ones(2)], out=lib.empty(0, dtype=lib.int32)),
    "cat complex into float": lambda lib: lib.cat([lib.ones(2, dtype=lib.complex64)], out=lib.empty(0)),
    "cat into an input": lambda lib: (lambda a: lib.cat([a[:2], a[2:]], out=a))(lib.arange(4.0)),
    "cat into a disjoint part of an input's storage": lambda lib: (lambda a: lib.cat([a[:1], a[1:2]], out=a[2:]))(
        lib.arange(4.0)
    ),
    "cat out of the wrong size": lambda lib: lib.cat([lib.ones(2), lib.zeros(2)], out=lib.empty(7)),
    "cat out on meta": lambda lib: lib.cat([lib.ones(2)], out=lib.empty(2, device="meta")),
    "stack into a narrower dtype": lambda lib: lib.stack([lib.ones(2), lib.ones(2)], out=lib.empty(0, dtype=lib.int64)),
    "stack into a transposed out": lambda lib: (
        lambda o: (lib.stack([lib.arange(3.0), lib.arange(3.0) + 5], 1, out=o), o)[1]
    )(lib.empty(2, 3).t()),
    "stack into a transposed out, dim 0": lambda lib: (
        lambda o: (lib.stack([lib.arange(3.0), lib.arange(3.0) + 5], 0, out=o), o)[1]
    )(lib.empty(3, 2).t()),
    "tril into another dtype": lambda lib: lib.tril(lib.ones(3, 3), out=lib.empty(0, dtype=lib.float64)),
    "triu into itself": lambda lib: (lambda a: lib.triu(a, 1, out=a))(lib.arange(9.0).reshape(3, 3)),
    "tril into a transposed out": lambda lib: (lambda o: (lib.tril(lib.arange(6.0).reshape(2, 3), out=o), o)[1])(
        lib.empty(3, 2).t()
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_out_matches_pytorch(name: str):
    theirs, ours = _both(CASES[name])
    if isinstance(theirs, type):
        assert ours is theirs or (isinstance(ours, type) and issubclass(ours, theirs)), f"{name}: {ours} vs {theirs}"
        return
    assert not isinstance(ours, type), f"{name}: we raised {ours}"
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    if theirs.device.type != "meta":
        np.testing.assert_array_equal(np.array(_values(ours)), np.array(_values(theirs)))


def test_out_is_returned_and_versioned():
    out = ember.empty(0)
    version = out._version
    assert ember.cat([ember.ones(2), ember.zeros(1)], out=out) is out
    assert out._version > version and out.tolist() == [1.0, 1.0, 0.0]
    out = ember.empty(0)
    assert ember.stack([ember.ones(2), ember.zeros(2)], 1, out=out) is out
    assert out.tolist() == [[1.0, 0.0], [1.0, 0.0]]
    assert ember.vstack([ember.ones(2), ember.zeros(2)], out=out) is out
    x = ember.ones(2, 2)
    version = x._version
    assert x.tril_() is x and x._version > version


def test_meta_inplace_and_out():
    x = ember.empty(2, 3, 4, device="meta")
    assert x.triu_(1) is x
    out = ember.empty(0, device="meta")
    assert ember.tril(x, out=out) is out and tuple(out.shape) == (2, 3, 4)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.empty(3, device="meta").tril_()
