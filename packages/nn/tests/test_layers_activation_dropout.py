"""The activations and dropout layers added to ``ember.nn`` against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from breadth_oracle import check_function, check_layer  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402


def _x(*shape, scale=2.0):
    return lambda rng: [rng.standard_normal(shape) * scale]


LAYERS = [
    ("Threshold", lambda nn: nn.Threshold(0.3, -2.0), _x(3, 5)),
    ("Threshold-inplace-repr", lambda nn: nn.Sequential(nn.Identity(), nn.Threshold(0.1, 20, inplace=True)), _x(3, 5)),
    ("Hardshrink", lambda nn: nn.Hardshrink(0.7), _x(3, 5)),
    ("Softshrink", lambda nn: nn.Softshrink(), _x(3, 5)),
    ("Tanhshrink", lambda nn: nn.Tanhshrink(), _x(3, 5)),
    ("RReLU-eval", lambda nn: nn.RReLU(0.1, 0.3), _x(3, 5)),
    ("Softmax2d", lambda nn: nn.Softmax2d(), _x(2, 3, 4, 5)),
    ("Dropout1d-eval", lambda nn: nn.Dropout1d(0.3), _x(2, 3, 4)),
    ("Dropout2d-eval", lambda nn: nn.Dropout2d(), _x(2, 3, 4, 4)),
    ("Dropout3d-eval", lambda nn: nn.Dropout3d(0.1, inplace=True), _x(2, 3, 2, 2, 2)),
    ("AlphaDropout-eval", lambda nn: nn.AlphaDropout(0.2), _x(3, 4)),
    ("FeatureAlphaDropout-eval", lambda nn: nn.FeatureAlphaDropout(0.2), _x(2, 3, 4)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build,inputs", LAYERS, ids=[spec[0] for spec in LAYERS])
def test_layer_matches_torch_in_eval(name, build, inputs, dtype):
    if "inplace" in name:  # an in-place layer cannot run on a leaf that requires grad; values only
        torch.manual_seed(0)
        assert repr(build(ember.nn)).replace("ember.", "torch.") == repr(build(torch.nn))
        return
    check_layer(build, inputs, dtype, training=False)


def test_dropout_p_zero_in_training_is_the_identity_as_in_torch():
    for name, dims in (
        ("Dropout1d", 3),
        ("Dropout2d", 4),
        ("Dropout3d", 5),
        ("AlphaDropout", 2),
        ("FeatureAlphaDropout", 3),
    ):
        shape = (2, 3, 4, 4, 4)[:dims]
        check_layer(lambda nn, name=name: getattr(nn, name)(0.0), _x(*shape), "float64", training=True)


FUNCTIONS = [
    ("threshold", lambda lib, x: lib.nn.functional.threshold(x, 0.3, -2.0)),
    ("hardshrink", lambda lib, x: lib.nn.functional.hardshrink(x, 0.7)),
    ("softshrink", lambda lib, x: lib.nn.functional.softshrink(x, 0.4)),
    ("tanhshrink", lambda lib, x: lib.nn.functional.tanhshrink(x)),
    ("rrelu", lambda lib, x: lib.nn.functional.rrelu(x, 0.2, 0.4)),
    ("relu_", lambda lib, x: lib.nn.functional.relu_(x * 1)),
    ("elu_", lambda lib, x: lib.nn.functional.elu_(x * 1, 0.5)),
    ("selu_", lambda lib, x: lib.nn.functional.selu_(x * 1)),
    ("celu_", lambda lib, x: lib.nn.functional.celu_(x * 1, 0.7)),
    ("leaky_relu_", lambda lib, x: lib.nn.functional.leaky_relu_(x * 1, 0.2)),
    ("hardtanh_", lambda lib, x: lib.nn.functional.hardtanh_(x * 1, -0.5, 0.5)),
    ("threshold_", lambda lib, x: lib.nn.functional.threshold_(x * 1, 0.1, 3.0)),
    ("rrelu_", lambda lib, x: lib.nn.functional.rrelu_(x * 1)),
]


@pytest.mark.parametrize("name,fn", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_functional_activation_matches_torch(name, fn):
    x = np.random.default_rng(0).standard_normal((4, 5)) * 2
    # PyTorch's in-place celu computes its gradient from the output with alpha in single precision.
    tol = (1e-7, 1e-7) if name == "celu_" else None
    check_function(lambda t: fn(ember, t), lambda t: fn(torch, t), [x], tol=tol)


def test_softshrink_and_softmax2d_errors_match_torch():
    for dtype in ("float32", "float64"):
        with pytest.raises(RuntimeError) as theirs:
            torch.nn.functional.softshrink(torch.ones(2, dtype=getattr(torch, dtype)), -1.0)
        with pytest.raises(RuntimeError) as ours:
            F.softshrink(ember.ones(2, dtype=getattr(ember, dtype)), -1.0)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        ember.nn.Softmax2d()(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ember.ones(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got 1\.5"):
        ember.nn.Dropout3d(1.5)


def test_rrelu_in_training_draws_slopes_between_the_bounds():
    x = -ember.ones(20000)
    y = -F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert y.min() >= 0.1 and y.max() <= 0.3 and abs(y.mean() - 0.2) < 0.01


@pytest.mark.parametrize("name,dims", [("dropout1d", 3), ("dropout2d", 4), ("dropout3d", 5)])
def test_channel_dropout_drops_whole_channels_and_rescales(name, dims):
    x = ember.ones(40, 50, *([3] * (dims - 2)))
    y = getattr(F, name)(x, 0.25).numpy().reshape(40 * 50, -1)
    assert (y.min(1) == y.max(1)).all()  # one draw per channel
    kept = y[:, 0] != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_values_match_torch_and_keep_the_moments(feature):
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    ref = torch.nn.functional.feature_alpha_dropout if feature else torch.nn.functional.alpha_dropout
    x = ember.randn(200, 100, 4)
    y = fn(x, 0.2, training=True).numpy()
    expected_levels = np.unique(ref(torch.zeros(200, 100, 4, dtype=torch.float32), 0.2, training=True).numpy())
    np.testing.assert_allclose(np.unique(fn(ember.zeros(200, 100, 4), 0.2, training=True).numpy()), expected_levels,
                               rtol=1e-6)  # fmt: skip
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05


def test_gumbel_softmax_hard_is_one_hot_with_the_soft_gradient():
    logits = ember.randn(5, 4, requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert (y.detach().numpy().sum(1) == 1).all() and set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    (y * ember.arange(4.0)).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
