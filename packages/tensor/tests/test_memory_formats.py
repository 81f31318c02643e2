"""Memory formats (``contiguous_format``, ``channels_last``, ``channels_last_3d``, ``preserve_format``)
against PyTorch: the strides each operation gives, ``is_contiguous`` answers, values, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]
SHAPES = [(2, 3, 4, 5), (1, 3, 1, 1), (2, 1, 4, 5), (2, 3, 1, 5), (0, 3, 2, 2), (2, 3, 4, 5, 6), (1, 1, 1, 2, 1)]


def _pair(shape, layout="plain"):
    array = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    ours, theirs = ember.tensor(array), torch.tensor(array)
    if layout == "channels_last" and len(shape) == 4:
        ours, theirs = (
            ours.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
            theirs.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
        )
    if layout == "sliced":
        ours, theirs = ours[..., ::2], theirs[..., ::2]
    return ours, theirs


def _call(fn_ours, fn_theirs):
    """Both results, or both errors' types and messages."""
    try:
        theirs = fn_theirs()
    except RuntimeError as error:
        with pytest.raises(RuntimeError) as ours:
            fn_ours()
        return None, str(error), str(ours.value)
    return fn_ours(), theirs, None


@pytest.mark.parametrize("layout", ["plain", "channels_last", "sliced"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["contiguous", "clone", "to", "empty_like"])
def test_strides_and_values_match_pytorch(op, shape, fmt, layout):
    ours, theirs = _pair(shape, layout)
    our_fmt, their_fmt = getattr(ember, fmt), getattr(torch, fmt)
    calls = {
        "contiguous": (
            lambda: ours.contiguous(memory_format=our_fmt),
            lambda: theirs.contiguous(memory_format=their_fmt),
        ),
        "clone": (lambda: ours.clone(memory_format=our_fmt), lambda: theirs.clone(memory_format=their_fmt)),
        "to": (lambda: ours.to(memory_format=our_fmt), lambda: theirs.to(memory_format=their_fmt)),
        "empty_like": (
            lambda: ember.empty_like(ours, memory_format=our_fmt),
            lambda: torch.empty_like(theirs, memory_format=their_fmt),
        ),
    }
    got, expected, message = _call(*calls[op])
    if got is None:
        assert expected.split(":")[0].split(" ")[0] in message, (expected, message)
        return
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.stride() == expected.stride()
    if op != "empty_like":
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    if op in ("contiguous", "to"):
        assert (got is ours) == (expected is theirs)


@pytest.mark.parametrize("layout", ["plain", "channels_last", "sliced"])
@pytest.mark.parametrize("fmt", ["contiguous_format", "channels_last", "channels_last_3d"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_is_contiguous_matches_pytorch(shape, fmt, layout):
    ours, theirs = _pair(shape, layout)
    assert ours.is_contiguous(memory_format=getattr(ember, fmt)) == theirs.is_contiguous(
        memory_format=getattr(torch, fmt)
    )


@pytest.mark.parametrize("fmt", ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 4, 5, 6), (3, 4)], ids=str)
def test_empty_matches_pytorch(shape, fmt):
    got, expected, message = _call(
        lambda: ember.empty(shape, memory_format=getattr(ember, fmt)),
        lambda: torch.empty(shape, memory_format=getattr(torch, fmt)),
    )
    if got is None:
        assert expected.split(" ")[0] in message, (expected, message)
    else:
        assert got.stride() == expected.stride()


def test_module_to_channels_last_changes_only_image_weights():
    ours = ember.nn.Sequential(ember.nn.Conv2d(3, 8, 3), ember.nn.BatchNorm2d(8), ember.nn.Linear(4, 4))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.Linear(4, 4))
    ours.to(memory_format=ember.channels_last)
    theirs.to(memory_format=torch.channels_last)
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert a.stride() == b.stride(), name
        assert isinstance(a, ember.nn.Parameter)


def test_channels_last_conv_keeps_layout_and_values():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    ours = ember.nn.functional.conv2d(ember.tensor(x).to(memory_format=ember.channels_last), ember.tensor(w))
    theirs = torch.nn.functional.conv2d(torch.tensor(x).to(memory_format=torch.channels_last), torch.tensor(w))
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


def test_formats_print_and_compare_like_pytorch():
    assert repr(ember.channels_last) == "ember.channels_last"
    assert ember.legacy_contiguous_format == ember.contiguous_format
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the contiguous operator"):
        ember.ones(2, 3).t().contiguous(memory_format=ember.preserve_format)
