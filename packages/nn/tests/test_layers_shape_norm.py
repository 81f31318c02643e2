"""Padding, shuffling, folding, resampling, distance and normalization layers against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from breadth_oracle import check_function, check_layer  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402


def _x(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def _two(*shape):
    return lambda rng: [rng.standard_normal(shape), rng.standard_normal(shape)]


LAYERS = [
    ("ConstantPad1d", lambda nn: nn.ConstantPad1d((1, 2), 3.5), _x(2, 3, 4)),
    ("ConstantPad2d", lambda nn: nn.ConstantPad2d(1, -1.0), _x(2, 3, 4)),
    ("ConstantPad3d", lambda nn: nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5), _x(1, 2, 3, 4, 2)),
    ("ZeroPad1d", lambda nn: nn.ZeroPad1d(2), _x(2, 3, 4)),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d((1, 0, 2, 1)), _x(2, 3, 4, 4)),
    ("ZeroPad3d", lambda nn: nn.ZeroPad3d(1), _x(2, 3, 2, 2)),
    ("ReflectionPad1d", lambda nn: nn.ReflectionPad1d((2, 1)), _x(2, 3, 4)),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d(2), _x(2, 3, 4, 5)),
    ("ReflectionPad3d", lambda nn: nn.ReflectionPad3d((1, 1, 2, 0, 1, 1)), _x(1, 2, 3, 4, 3)),
    ("ReplicationPad1d", lambda nn: nn.ReplicationPad1d(3), _x(3, 4)),
    ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d((1, 2, 0, 3)), _x(2, 3, 4, 5)),
    ("ReplicationPad3d", lambda nn: nn.ReplicationPad3d(1), _x(1, 2, 3, 4, 3)),
    ("CircularPad1d", lambda nn: nn.CircularPad1d((2, 1)), _x(2, 3, 4)),
    ("CircularPad2d", lambda nn: nn.CircularPad2d(1), _x(2, 3, 4, 5)),
    ("CircularPad3d", lambda nn: nn.CircularPad3d((1, 0, 1, 2, 0, 1)), _x(1, 2, 3, 4, 3)),
    ("PixelShuffle", lambda nn: nn.PixelShuffle(2), _x(2, 8, 3, 4)),
    ("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(3), _x(2, 6, 9)),
    ("ChannelShuffle", lambda nn: nn.ChannelShuffle(3), _x(2, 6, 4, 2)),
    ("Unfold", lambda nn: nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), _x(2, 3, 6, 7)),
    ("Unfold-unbatched", lambda nn: nn.Unfold(2), _x(3, 4, 4)),
    ("Fold", lambda nn: nn.Fold((5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), _x(2, 3 * 6, 12)),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(scale_factor=2), _x(1, 2, 3, 3)),
    ("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(size=(5, 7)), _x(1, 2, 3, 4)),
    ("Upsample-linear", lambda nn: nn.Upsample(scale_factor=2.5, mode="linear"), _x(2, 3, 4)),
    ("Upsample-linear-corners", lambda nn: nn.Upsample(size=7, mode="linear", align_corners=True), _x(2, 3, 4)),
    ("Upsample-trilinear", lambda nn: nn.Upsample(size=(3, 5, 4), mode="trilinear"), _x(1, 2, 2, 3, 4)),
    ("Upsample-trilinear-scale", lambda nn: nn.Upsample(scale_factor=(2, 1.5, 3), mode="trilinear", align_corners=True),
     _x(1, 2, 2, 3, 2)),
    ("Upsample-nearest3d", lambda nn: nn.Upsample(scale_factor=(2, 1, 3)), _x(1, 2, 2, 3, 2)),
    ("Upsample-bicubic", lambda nn: nn.Upsample(scale_factor=(1.5, 0.7), mode="bicubic"), _x(2, 3, 5, 6)),
    ("Upsample-bicubic-corners", lambda nn: nn.Upsample(size=(7, 11), mode="bicubic", align_corners=True),
     _x(2, 3, 5, 6)),
    ("PairwiseDistance", lambda nn: nn.PairwiseDistance(), _two(4, 5)),
    ("PairwiseDistance-p1-keepdim", lambda nn: nn.PairwiseDistance(1.0, 1e-3, keepdim=True), _two(4, 5)),
    ("CosineSimilarity", lambda nn: nn.CosineSimilarity(dim=0), _two(4, 5)),
    ("BatchNorm3d", lambda nn: nn.BatchNorm3d(3), _x(2, 3, 2, 3, 2)),
    ("InstanceNorm1d", lambda nn: nn.InstanceNorm1d(3), _x(2, 3, 5)),
    ("InstanceNorm1d-unbatched", lambda nn: nn.InstanceNorm1d(3, affine=True), _x(3, 5)),
    ("InstanceNorm2d-affine", lambda nn: nn.InstanceNorm2d(3, affine=True), _x(2, 3, 4, 4)),
    ("InstanceNorm3d-tracked", lambda nn: nn.InstanceNorm3d(2, track_running_stats=True), _x(2, 2, 3, 2, 3)),
    ("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(3, alpha=0.1), _x(2, 5, 4)),
    ("LocalResponseNorm-4d", lambda nn: nn.LocalResponseNorm(2, alpha=0.2, beta=0.5, k=2.0), _x(2, 6, 3, 3)),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build,inputs", LAYERS, ids=[spec[0] for spec in LAYERS])
def test_layer_matches_torch(name, build, inputs, dtype):
    check_layer(build, inputs, dtype)


@pytest.mark.parametrize("name", ["InstanceNorm2d", "BatchNorm3d"])
def test_running_statistics_match_torch_after_training_and_in_eval(name):
    shape = (3, 2, 4, 4) if name == "InstanceNorm2d" else (3, 2, 2, 3, 2)

    def build(nn):
        return getattr(nn, name)(2, momentum=0.3, affine=True, track_running_stats=True)

    check_layer(build, _x(*shape), "float64", training=True)
    check_layer(build, _x(*shape), "float64", training=False)
    torch.manual_seed(0)
    theirs, ours = build(torch.nn).double(), build(ember.nn).double()
    x = np.random.default_rng(3).standard_normal(shape)
    for _ in range(2):
        theirs(torch.tensor(x))
        ours(ember.tensor(x))
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12, err_msg=key)


def test_cross_map_lrn2d_forward_matches_torch():
    x = np.random.default_rng(0).standard_normal((2, 7, 3, 3))
    for size in (3, 4, 5):
        theirs = torch.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
        ours = ember.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(ours(ember.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-12)


def test_pdist_and_functional_forms_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3))
    for p in (1.0, 2.0, 3.0):
        check_function(lambda t, p=p: F.pdist(t, p), lambda t, p=p: torch.nn.functional.pdist(t, p), [x])
    check_function(
        lambda t: F.pairwise_distance(t, t[0]), lambda t: torch.nn.functional.pairwise_distance(t, t[0]), [x]
    )
    check_function(
        lambda t: F.channel_shuffle(t, 2),
        lambda t: torch.nn.functional.channel_shuffle(t, 2),
        [x.reshape(1, 5 * 3)[:, :12].reshape(1, 4, 3)],
    )
    y = rng.standard_normal((2, 4, 3))
    np.testing.assert_array_equal(
        F.native_channel_shuffle(ember.tensor(y), 2).numpy(), torch.native_channel_shuffle(torch.tensor(y), 2).numpy()
    )
    check_function(
        lambda t: F.instance_norm(t, use_input_stats=True),
        lambda t: torch.nn.functional.instance_norm(t),
        [rng.standard_normal((2, 3, 4))],
    )
    with pytest.warns(UserWarning, match="upsample_nearest is deprecated"):
        F.upsample_nearest(ember.ones(1, 1, 2, 2), scale_factor=2)
    check_function(
        lambda t: F.interpolate(t, scale_factor=1.7, mode="area"), lambda t: torch.nn.functional.interpolate(t, scale_factor=1.7, mode="area"),
        [rng.standard_normal((1, 2, 5))],
    )  # fmt: skip
    check_function(
        lambda t: F.interpolate(t, size=(2, 3, 2), mode="area"), lambda t: torch.nn.functional.interpolate(t, size=(2, 3, 2), mode="area"),
        [rng.standard_normal((1, 2, 5, 4, 3))],
    )  # fmt: skip


def test_shape_layer_errors_match_torch():
    cases = [
        (lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(1, 3, 2, 2), 2), RuntimeError),
        (lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(1, 3, 3, 2), 2), RuntimeError),
        (lambda lib: lib.nn.functional.channel_shuffle(lib.ones(1, 5, 2), 2), RuntimeError),
        (lambda lib: lib.nn.CircularPad2d(1)(lib.ones(2, 2)), ValueError),
        (lambda lib: lib.nn.InstanceNorm1d(3, affine=True)(lib.ones(2, 4, 5)), ValueError),
        (lambda lib: lib.nn.InstanceNorm2d(3)(lib.ones(2, 3)), ValueError),
        (lambda lib: lib.nn.functional.instance_norm(lib.ones(2, 3, 1)), ValueError),
        (lambda lib: lib.nn.functional.local_response_norm(lib.ones(2, 3), 2), ValueError),
        (lambda lib: lib.nn.functional.fold(lib.ones(1, 4, 5), (3, 3), 2), RuntimeError),
        (lambda lib: lib.nn.functional.pdist(lib.ones(2, 3, 4)), RuntimeError),
        (lambda lib: lib.nn.BatchNorm3d(2)(lib.ones(2, 2, 3)), ValueError),
    ]
    for fn, error in cases:
        with pytest.raises(error) as theirs:
            fn(torch)
        with pytest.raises(error) as ours:
            fn(ember)
        assert str(ours.value) == str(theirs.value).replace("torch.", "ember.")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "kwargs", [{"size": (5, 6)}, {"scale_factor": 0.37}, {"size": (20, 9)}, {"size": (4, 7), "align_corners": True}]
)
def test_antialiased_interpolate_matches_torch(mode, kwargs):
    x = np.random.default_rng(0).standard_normal((2, 3, 13, 17))
    check_function(
        lambda t: F.interpolate(t, mode=mode, antialias=True, **kwargs),
        lambda t: torch.nn.functional.interpolate(t, mode=mode, antialias=True, **kwargs),
        [x],
    )
