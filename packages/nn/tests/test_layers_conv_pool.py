"""The convolutions and pools beyond 2-D (and the 1-D transposed convolution) against PyTorch."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from breadth_oracle import check_function, check_layer  # noqa: E402

import ember  # noqa: E402


def _x(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def _positive(*shape):
    return lambda rng: [np.abs(rng.standard_normal(shape)) + 0.1]


LAYERS = [
    ("Conv3d", lambda nn: nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2),
     _x(2, 4, 6, 5, 7)),
    ("Conv3d-same-unbatched", lambda nn: nn.Conv3d(2, 3, 3, padding="same", bias=False), _x(2, 4, 5, 4)),
    ("Conv3d-circular", lambda nn: nn.Conv3d(2, 3, 3, padding=1, padding_mode="circular"), _x(1, 2, 4, 4, 4)),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1), _x(2, 4, 7)),
    ("ConvTranspose3d", lambda nn: nn.ConvTranspose3d(4, 6, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1),
                                                      output_padding=(1, 0, 1), groups=2, dilation=(1, 2, 1)),
     _x(2, 4, 3, 4, 3)),
    ("ConvTranspose3d-unbatched", lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=3, padding=1, dilation=2), _x(2, 3, 3, 2)),
    ("MaxPool3d", lambda nn: nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True), _x(2, 3, 5, 6, 7)),
    ("MaxPool3d-dilated", lambda nn: nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1)), _x(3, 5, 6, 7)),
    ("AvgPool3d", lambda nn: nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     _x(2, 3, 5, 6, 7)),
    ("AvgPool3d-divisor", lambda nn: nn.AvgPool3d(2, divisor_override=3), _x(2, 3, 4, 4, 5)),
    ("AdaptiveAvgPool3d", lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)), _x(2, 3, 5, 6, 7)),
    ("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(4), _x(2, 3, 11)),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d((3, 4)), _x(2, 3, 7, 9)),
    ("AdaptiveMaxPool3d", lambda nn: nn.AdaptiveMaxPool3d(2), _x(3, 5, 7, 6)),
    ("LPPool1d", lambda nn: nn.LPPool1d(2, 3, stride=2), _positive(2, 3, 9)),
    ("LPPool2d", lambda nn: nn.LPPool2d(1.5, (2, 3), ceil_mode=True), _positive(2, 3, 7, 8)),
    ("LPPool3d", lambda nn: nn.LPPool3d(3, 2), _positive(2, 3, 4, 5, 6)),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build,inputs", LAYERS, ids=[spec[0] for spec in LAYERS])
def test_layer_matches_torch(name, build, inputs, dtype):
    check_layer(build, inputs, dtype)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_pools_return_torch_indices_and_unpool_inverts_them(k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 3, *([6] * k)))
    pool = getattr(torch.nn.functional, f"max_pool{k}d")
    ours_pool = getattr(ember.nn.functional, f"max_pool{k}d")
    values, indices = pool(torch.tensor(x), 2, return_indices=True)
    got = ours_pool(ember.tensor(x), 2, return_indices=True)
    assert (got[1].numpy() == indices.numpy()).all()
    check_layer(
        lambda nn: getattr(nn, f"MaxUnpool{k}d")(2), lambda rng: [values.numpy(), indices.numpy()], "float64",
    )  # fmt: skip
    size = [7] * k
    check_function(
        lambda v: getattr(ember.nn.functional, f"max_unpool{k}d")(
            v, ember.tensor(indices.numpy()), 2, output_size=size
        ),
        lambda v: getattr(torch.nn.functional, f"max_unpool{k}d")(v, indices, 2, output_size=size),
        [values.numpy()],
    )
    adaptive = getattr(torch.nn.functional, f"adaptive_max_pool{k}d")(torch.tensor(x), 4, return_indices=True)[1]
    ours = getattr(ember.nn.functional, f"adaptive_max_pool{k}d")(ember.tensor(x), 4, return_indices=True)[1]
    assert (ours.numpy() == adaptive.numpy()).all()


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fractional_max_pool_with_given_samples_matches_torch(k, dtype):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 3, *([9] * k)))
    samples = rng.random((2, 3, k)).astype(dtype)
    for kwargs in (dict(output_size=4), dict(output_ratio=(0.5,) * k)):

        def build(nn, kwargs=kwargs):
            lib = torch if nn is torch.nn else ember
            return getattr(nn, f"FractionalMaxPool{k}d")(
                3, return_indices=True, _random_samples=lib.tensor(samples), **kwargs
            )

        check_layer(build, lambda rng: [x], dtype)


def test_fractional_max_pool_without_samples_draws_windows():
    out, indices = ember.nn.FractionalMaxPool2d(2, output_size=3, return_indices=True)(ember.randn(1, 2, 8, 8))
    assert tuple(out.shape) == (1, 2, 3, 3) and int(indices.max()) < 64


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.max_pool3d(lib.ones(1, 1, 1, 4, 4), 2),
        lambda lib: lib.nn.functional.max_pool3d(lib.ones(2, 3, 1, 4, 4), 2),
        lambda lib: lib.nn.functional.avg_pool3d(lib.ones(1, 1, 1, 4, 4), 2),
        lambda lib: lib.nn.functional.max_pool3d(lib.ones(1, 1, 4, 4, 4), 2, padding=2),
    ],
)
def test_pool_size_errors_are_torch_messages(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ember)
    assert str(ours.value) == str(theirs.value)


def test_pool_and_conv_errors_match_torch():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        ember.nn.functional.max_pool3d(ember.randn(1, 1, 4, 4, 4), 2, padding=2)
    values, indices = torch.nn.functional.max_pool2d(torch.randn(2, 3, 8, 9), 2, return_indices=True)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.max_unpool2d(values, indices, 2)
    with pytest.raises(RuntimeError) as ours:
        ember.nn.functional.max_unpool2d(ember.tensor(values.numpy()), ember.tensor(indices.numpy()), 2)
    # Which invalid index is named depends on PyTorch's loop order; the message is the same otherwise.
    pattern = r"Found an invalid max index: \d+ \(output volumes are of size 8x8\)"
    assert re.fullmatch(pattern, str(ours.value)) and re.fullmatch(pattern, str(theirs.value))
    with pytest.raises(ValueError, match="requires specifying either"):
        ember.nn.FractionalMaxPool2d(2)
    with pytest.raises(RuntimeError, match="Expected 4D \\(unbatched\\) or 5D \\(batched\\) input to conv3d"):
        ember.nn.functional.conv3d(ember.randn(2, 3), ember.randn(1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ember.nn.Conv3d(3, 4, 2, groups=2)


def test_conv_tbc_matches_torch():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((9, 2, 4)), rng.standard_normal((3, 4, 5)), rng.standard_normal(5)
    check_function(
        lambda x, w, b: ember.nn.functional.conv_tbc(x, w, b, 1), lambda x, w, b: torch.conv_tbc(x, w, b, 1), [x, w, b]
    )
