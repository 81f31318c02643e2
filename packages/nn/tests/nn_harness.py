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


def missing_derivatives(forward) -> list[str]:
    """The ops without a derivative that ``forward()`` records, in the order first met.

    A wrapper of the autograd level sees every op the forward records, decompositions' parts
    included; an op the table lacks, called where it would record, is noted and runs without
    recording so that the forward goes on.
    """
    from ember.autograd import registry
    from ember.core import dispatch

    lacking = set(registry.missing())
    seen: list[str] = []

    def interpose(op, args, kwargs, call_below):
        records = ember.is_grad_enabled() and any(
            isinstance(a, ember.Tensor) and a.requires_grad for a in (*args, *kwargs.values())
        )
        if records and op in lacking:
            if str(op) not in seen:
                seen.append(str(op))
            with ember.no_grad():
                out = call_below(args, kwargs)
            # Outputs that would have required grad do so again, so the ops after this one are seen too.
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, ember.Tensor) and t.is_floating_point() and not t.requires_grad:
                    t.requires_grad_(True)
            return out
        return call_below(args, kwargs)

    recording = dispatch.level_handler("autograd")

    def interpose_autograd(op, args, kwargs, call_below):
        return interpose(op, args, kwargs, lambda a, k: recording(op, a, k, call_below))

    dispatch.install_level("autograd", interpose_autograd)
    try:
        forward()
    finally:
        dispatch.install_level("autograd", recording)
    return seen


def pending_derivative(forward):
    """A strict xfail while some op of ``forward`` lacks its derivative; none once they all have one."""
    missing = missing_derivatives(forward)
    return pytest.mark.xfail(
        bool(missing), strict=True, reason=f"derivative of {', '.join(missing)} not yet in the table"
    )
