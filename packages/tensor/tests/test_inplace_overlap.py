"""In-place and ``out=`` pointwise ops refuse an operand that shares part of the written memory (or
all of it in another layout), as PyTorch does; the same tensor, the same view and disjoint views
are fine."""

from __future__ import annotations

import pytest
from opinfo import ORACLE_MISSING, torch

import ember

CASES = {
    "transpose of itself": lambda lib: (lambda a: a.sub_(a.t()))(lib.arange(9.0).reshape(3, 3)),
    "shifted view": lambda lib: (lambda a: a[1:].add_(a[:-1]))(lib.arange(5.0)),
    "shifted ints": lambda lib: (lambda a: a[1:].mul_(a[:-1]))(lib.arange(5)),
    "out= over an input": lambda lib: (lambda a: lib.add(a[1:], a[:-1], out=a[:-1]))(lib.arange(5.0)),
    "clamp bound": lambda lib: (lambda a: a[1:].clamp_(min=a[:-1]))(lib.arange(5.0)),
    "itself": lambda lib: (lambda a: a.add_(a))(lib.arange(5.0)),
    "the same view": lambda lib: (lambda a: a[1:].add_(a[1:]))(lib.arange(5.0)),
    "disjoint views": lambda lib: (lambda a: a[:2].add_(a[3:]))(lib.arange(5.0)),
    "a copy": lambda lib: (lambda a: a[1:].add_(a[:-1].clone()))(lib.arange(5.0)),
}


def _outcome(lib, case):
    try:
        return ("ok", case(lib).tolist())
    except RuntimeError as error:
        return ("error", str(error))


@pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
@pytest.mark.parametrize("name", list(CASES))
def test_overlap_as_pytorch(name):
    assert _outcome(ember, CASES[name]) == _outcome(torch, CASES[name])
