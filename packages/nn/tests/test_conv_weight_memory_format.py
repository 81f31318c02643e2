"""``nn.utils.convert_conv2d_weight_memory_format`` and its 3-D form against PyTorch."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _net(lib, dims: int):
    nn = lib.nn
    conv, deconv = (nn.Conv2d, nn.ConvTranspose2d) if dims == 2 else (nn.Conv3d, nn.ConvTranspose3d)
    return nn.Sequential(conv(3, 4, 3), nn.ReLU(), nn.Sequential(deconv(4, 2, 3)), nn.Linear(3, 3))


@pytest.mark.parametrize("dims", [2, 3])
def test_weights_take_the_format_and_keep_their_values(dims):
    ours, theirs = _net(ember, dims), _net(torch, dims)
    before = [p.detach().clone() for p in ours.parameters()]
    name = "channels_last" if dims == 2 else "channels_last_3d"
    convert = (
        ember.nn.utils.convert_conv2d_weight_memory_format
        if dims == 2
        else ember.nn.utils.convert_conv3d_weight_memory_format
    )
    their_convert = getattr(torch.nn.utils, convert.__name__)
    assert convert(ours, getattr(ember, name)) is ours
    their_convert(theirs, getattr(torch, name))
    for (key, a), (_, b), old in zip(ours.named_parameters(), theirs.named_parameters(), before, strict=True):
        assert a.stride() == b.stride(), key
        assert ember.equal(a, old)
        assert isinstance(a, ember.nn.Parameter) and a.requires_grad
