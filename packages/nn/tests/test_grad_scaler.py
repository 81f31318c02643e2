"""ember.amp.GradScaler against torch.amp.GradScaler: scales, skipped steps, state, and misuse."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.amp

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the test oracle) is not installed")


def _run(lib, amp, nn, optim, steps: int):
    """A linear model trained with a scaler; the gradient overflows on steps 1 and 4."""
    data = np.random.default_rng(0).standard_normal((8, 3))
    model = nn.Linear(3, 2)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(np.arange(6.0).reshape(2, 3) / 10, dtype=lib.float32))
        model.bias.zero_()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    log = []
    x = lib.tensor(data, dtype=lib.float32)
    for step in range(steps):
        loss = (model(x) ** 2).mean()
        scaler.scale(loss).backward()
        if step in (1, 4):
            model.weight.grad[0, 0] = float("inf")
        scaler.unscale_(opt)
        log.append(float(model.bias.grad.sum()) if step not in (1, 4) else None)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        log.append(scaler.get_scale())
    log.append(np.asarray(model.weight.detach().tolist()))
    return log, scaler.state_dict()


@needs_torch
def test_training_with_overflows_matches_pytorch():
    pytest.importorskip("ember.optim")
    ours, our_state = _run(ember, ember.amp, ember.nn, ember.optim, 7)
    theirs, their_state = _run(torch, torch.amp, torch.nn, torch.optim, 7)
    for a, b in zip(ours[:-1], theirs[:-1], strict=True):
        assert a == b if a is None or b is None else a == pytest.approx(b, rel=1e-5)
    np.testing.assert_allclose(ours[-1], theirs[-1], rtol=1e-5, atol=1e-6)
    assert our_state == their_state


def test_scale_multiplies_nested_outputs_and_keeps_their_structure():
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0)
    a, b = ember.ones(2), ember.full((3,), 2.0)
    out = scaler.scale((a, [b]))
    assert isinstance(out, tuple) and isinstance(out[1], list)
    assert out[0].tolist() == [4.0, 4.0] and out[1][0].tolist() == [8.0] * 3
    with pytest.raises(ValueError, match="must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)


def test_a_scaler_for_cuda_without_cuda_is_disabled_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = ember.amp.GradScaler()
    assert "CUDA is not available" in str(caught[0].message)
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    loss = ember.ones(())
    assert scaler.scale(loss) is loss


def test_misuse_is_reported_as_pytorch_does():
    w = ember.ones(2, requires_grad=True)

    class Plain:
        def __init__(self, params) -> None:
            self.param_groups = [{"params": params}]

        def step(self):
            return "stepped"

    opt = Plain([w])
    scaler = ember.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match=r"did not use scaler\.scale"):
        scaler.step(opt)
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    assert scaler.step(opt) == "stepped"
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        scaler.load_state_dict({})
    half = ember.ones(2, dtype=ember.float16, requires_grad=True)
    half.grad = ember.ones(2, dtype=ember.float16)
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.unscale_(Plain([half]))
