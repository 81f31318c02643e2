"""Helpers of the data tests: results of ember and torch as plain Python values, and errors as (type, message)."""

from __future__ import annotations

import collections.abc

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

if torch is not None:
    import torch.utils.data


def plain(value):
    if isinstance(value, ember.Tensor) or (torch is not None and isinstance(value, torch.Tensor)):
        dtype = str(value.dtype).split(".")[-1]
        return ("tensor", dtype, tuple(value.shape), value.tolist())
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.tolist())
    if isinstance(value, collections.abc.Mapping):
        return (type(value).__name__, {key: plain(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return (type(value).__name__, [plain(item) for item in value])
    return value


def both(build):
    """``build(lib)`` with ``lib`` each of ember and torch, as plain values."""
    return plain(build(ember)), plain(build(torch))


def error_of(fn):
    try:
        fn()
    except Exception as error:  # the type and message are what is compared
        return type(error), str(error)
    return None


needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def lib_data(lib):
    return lib.utils.data
