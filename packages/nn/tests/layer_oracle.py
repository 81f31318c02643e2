"""Run one layer in Ember and in PyTorch from the same weights and inputs, and compare outputs and gradients."""

from __future__ import annotations

import numpy as np

import ember

try:
    import torch
except ImportError:
    torch = None


def to_numpy(t) -> np.ndarray:
    return np.asarray(t.detach().double().tolist() if t.dtype.is_floating_point else t.tolist())


def copy_weights(theirs, ours) -> None:
    """Load PyTorch module ``theirs``'s state into ``ours`` (same names, same shapes)."""
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


def tensors(rng, lib, *shapes, dtype="float64"):
    out = []
    for shape in shapes:
        out.append(lib.tensor(rng.standard_normal(shape), dtype=getattr(lib, dtype), requires_grad=True))
    return out


def flatten(value) -> list:
    if value is None:
        return []
    if isinstance(value, tuple | list):
        return [x for v in value for x in flatten(v)]
    return [value]


def compare(ours_module, theirs_module, make_inputs, call=None, rtol=1e-6, atol=1e-7, seed=0):
    """Same forward outputs and same gradients of inputs and parameters, through a random cotangent."""
    call = call or (lambda m, *xs: m(*xs))
    ours_in = make_inputs(np.random.default_rng(seed), ember)
    theirs_in = make_inputs(np.random.default_rng(seed), torch)
    ours_out = flatten(call(ours_module, *ours_in))
    theirs_out = flatten(call(theirs_module, *theirs_in))
    assert len(ours_out) == len(theirs_out)
    for a, b in zip(ours_out, theirs_out, strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=rtol, atol=atol)
    rng = np.random.default_rng(seed + 1)
    cots = [rng.standard_normal(tuple(b.shape)) for b in theirs_out]
    ours_loss = sum((a * ember.tensor(c, dtype=a.dtype)).sum() for a, c in zip(ours_out, cots, strict=True))
    theirs_loss = sum((b * torch.tensor(c, dtype=b.dtype)).sum() for b, c in zip(theirs_out, cots, strict=True))
    ours_loss.backward()
    theirs_loss.backward()
    ours_leaves = [x for x in flatten(ours_in) if isinstance(x, ember.Tensor) and x.requires_grad]
    theirs_leaves = [x for x in flatten(theirs_in) if isinstance(x, torch.Tensor) and x.requires_grad]
    for a, b in zip(ours_leaves, theirs_leaves, strict=True):
        np.testing.assert_allclose(to_numpy(a.grad), to_numpy(b.grad), rtol=rtol, atol=atol)
    ours_params = dict(ours_module.named_parameters())
    for name, p in theirs_module.named_parameters():
        if p.grad is None:
            assert ours_params[name].grad is None, name
            continue
        np.testing.assert_allclose(
            to_numpy(ours_params[name].grad), to_numpy(p.grad), rtol=rtol, atol=atol, err_msg=name
        )
