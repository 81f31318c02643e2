"""Shared by the nn tests: the torch oracle, and moving weights and values between the two."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def to_torch(t: ember.Tensor):
    return torch.from_numpy(np.array(t.detach().numpy()))


def to_ember(t) -> ember.Tensor:
    return ember.tensor(t.detach().numpy().copy())


def copy_weights(theirs, ours) -> None:
    """Give ``ours`` (an ember module) the parameters and buffers of ``theirs`` (a torch module)."""
    ours.load_state_dict({k: to_ember(v) for k, v in theirs.state_dict().items()})


def values(t: ember.Tensor) -> np.ndarray:
    # Not t.detach() when it needs none: a 0-d result of a pointwise op cannot be detached today.
    return np.asarray(t.detach().numpy() if t.requires_grad else t.numpy())


def assert_close(ours, theirs, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(values(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


def torch_repr(text: str) -> str:
    """Ember prints dtypes as ``ember.float32``; PyTorch as ``torch.float32``."""
    return text.replace("ember.", "torch.")


def pending_derivative(op: str):
    return pytest.mark.xfail(strict=True, reason=f"derivative of {op} not yet in the table")
