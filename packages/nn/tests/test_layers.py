"""Every layer against PyTorch's: same weights (copied through the state dict), same inputs, same
outputs in train and eval mode, same buffers afterwards, same gradients, and the same printing."""

from __future__ import annotations

import numpy as np
import pytest
from nn_harness import assert_close, copy_weights, needs_torch, pending_derivative, torch, torch_repr

import ember
import ember.nn as enn


def _x(*shape):
    return lambda rng: [rng.standard_normal(shape).astype(np.float32)]


def _ints(high, *shape):
    return lambda rng: [rng.integers(0, high, shape)]


# (id, constructor over an nn namespace, inputs from a numpy Generator, ops whose derivative is missing)
LAYERS = [
    ("Linear", lambda nn: nn.Linear(5, 3), _x(4, 5), "aten::t"),
    ("Linear-nobias-3d", lambda nn: nn.Linear(5, 3, bias=False), _x(2, 4, 5), "aten::t"),
    ("Bilinear", lambda nn: nn.Bilinear(3, 4, 2), lambda rng: [*_x(5, 3)(rng), *_x(5, 4)(rng)], "aten::unsqueeze"),
    ("Identity", lambda nn: nn.Identity(7, k=1), _x(2, 3), None),
    ("Embedding", lambda nn: nn.Embedding(10, 4, padding_idx=2), _ints(10, 3, 5), "aten::index_select"),
    ("Conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), _x(2, 3, 9), "aten::convolution"),
    ("Conv2d", lambda nn: nn.Conv2d(2, 4, (3, 2), padding=(1, 0), dilation=(1, 2)), _x(2, 2, 7, 8), "aten::convolution"),
    ("Conv2d-groups-same", lambda nn: nn.Conv2d(4, 6, 3, padding="same", groups=2, bias=False), _x(1, 4, 6, 6),
     "aten::convolution"),
    ("Conv2d-reflect", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), _x(1, 2, 5, 5),
     "aten::reflection_pad2d and aten::convolution"),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), _x(2, 3, 4, 4),
     "aten::convolution"),
    ("BatchNorm1d", lambda nn: nn.BatchNorm1d(4), _x(6, 4), "aten::_native_batch_norm_legit"),
    ("BatchNorm1d-3d-cma", lambda nn: nn.BatchNorm1d(3, momentum=None), _x(4, 3, 5), "aten::_native_batch_norm_legit"),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3, affine=False), _x(2, 3, 4, 4), "aten::_native_batch_norm_legit"),
    ("BatchNorm2d-untracked", lambda nn: nn.BatchNorm2d(3, track_running_stats=False), _x(2, 3, 4, 4),
     "aten::_native_batch_norm_legit"),
    ("LayerNorm", lambda nn: nn.LayerNorm((4, 5)), _x(3, 4, 5), "aten::var.correction"),
    ("RMSNorm", lambda nn: nn.RMSNorm(5, eps=1e-6), _x(3, 5), None),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 4), _x(3, 4, 5), "aten::native_group_norm"),
    ("Dropout-eval-or-p0", lambda nn: nn.Dropout(0.0), _x(3, 4), "aten::dropout"),
    ("ReLU", lambda nn: nn.ReLU(), _x(3, 4), None),
    ("GELU", lambda nn: nn.GELU(), _x(3, 4), None),
    ("GELU-tanh", lambda nn: nn.GELU(approximate="tanh"), _x(3, 4), None),
    ("SiLU", lambda nn: nn.SiLU(), _x(3, 4), None),
    ("Mish", lambda nn: nn.Mish(), _x(3, 4), None),
    ("Tanh", lambda nn: nn.Tanh(), _x(3, 4), None),
    ("Sigmoid", lambda nn: nn.Sigmoid(), _x(3, 4), None),
    ("Softmax", lambda nn: nn.Softmax(dim=1), _x(3, 4), "aten::amax"),
    ("LogSoftmax", lambda nn: nn.LogSoftmax(dim=-1), _x(3, 4), "aten::amax"),
    ("LeakyReLU", lambda nn: nn.LeakyReLU(0.2), _x(3, 4), None),
    ("ELU", lambda nn: nn.ELU(alpha=0.7), lambda rng: [rng.standard_normal((3, 4)).astype(np.float32) * 50], None),
    ("Hardtanh", lambda nn: nn.Hardtanh(-0.5, 0.8), _x(3, 4), None),
    ("ReLU6", lambda nn: nn.ReLU6(), lambda rng: [rng.standard_normal((3, 4)).astype(np.float32) * 8], None),
    ("Softplus", lambda nn: nn.Softplus(beta=2.0, threshold=5.0), lambda rng: [rng.standard_normal((3, 4)).astype(np.float32) * 6], None),
    ("PReLU", lambda nn: nn.PReLU(), _x(3, 4), None),
    ("PReLU-channels", lambda nn: nn.PReLU(3, init=0.1), _x(2, 3, 4), None),
    ("SELU", lambda nn: nn.SELU(), _x(3, 4), None),
    ("CELU", lambda nn: nn.CELU(0.5), _x(3, 4), None),
    ("Hardswish", lambda nn: nn.Hardswish(), lambda rng: [rng.uniform(-5, 5, (3, 4)).astype(np.float32)], None),
    ("Hardsigmoid", lambda nn: nn.Hardsigmoid(), lambda rng: [rng.uniform(-5, 5, (3, 4)).astype(np.float32)], None),
    ("LogSigmoid", lambda nn: nn.LogSigmoid(), _x(3, 4), None),
    ("Softsign", lambda nn: nn.Softsign(), _x(3, 4), None),
    ("Softmin", lambda nn: nn.Softmin(dim=0), _x(3, 4), None),
    ("GLU", lambda nn: nn.GLU(dim=1), _x(3, 4), None),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(2), _x(2, 3, 6, 6), "aten::max_pool2d_with_indices"),
    ("MaxPool2d-ceil", lambda nn: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), _x(1, 2, 7, 7),
     "aten::max_pool2d_with_indices"),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(2, stride=1), _x(2, 3, 5, 5), "aten::avg_pool2d"),
    ("MaxPool1d", lambda nn: nn.MaxPool1d(3, stride=2, padding=1), _x(2, 3, 9), "aten::unsqueeze"),
    ("MaxPool1d-unbatched", lambda nn: nn.MaxPool1d(2, ceil_mode=True), _x(3, 7), "aten::unsqueeze"),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(3, padding=1, count_include_pad=False), _x(2, 3, 8), "aten::unsqueeze"),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(4), _x(2, 3, 9), "aten::unsqueeze"),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((2, 3)), _x(2, 3, 5, 7), "aten::_adaptive_avg_pool2d"),
    ("Flatten", lambda nn: nn.Flatten(), _x(2, 3, 4), None),
    ("Unflatten", lambda nn: nn.Unflatten(1, (2, 3)), _x(4, 6), None),
    ("Upsample-nearest", lambda nn: nn.Upsample(scale_factor=2), _x(1, 2, 3, 3), "aten::upsample_nearest2d"),
    ("Upsample-bilinear", lambda nn: nn.Upsample(size=(5, 4), mode="bilinear", align_corners=False),
     _x(1, 2, 3, 3), "aten::upsample_bilinear2d"),
]  # fmt: skip


def _pair(build, seed: int = 0):
    torch.manual_seed(seed)
    theirs = build(torch.nn)
    ours = build(enn)
    if list(theirs.state_dict()):
        copy_weights(theirs, ours)
    return theirs, ours


@needs_torch
@pytest.mark.parametrize("name,build,inputs,_pending", LAYERS, ids=[spec[0] for spec in LAYERS])
def test_forward_matches_torch_in_train_and_eval(name, build, inputs, _pending):
    theirs, ours = _pair(build)
    rng = np.random.default_rng(0)
    for training in (True, False):
        theirs.train(training)
        ours.train(training)
        arrays = inputs(rng)
        # Without recording: the gradients are the next test's subject (several derivatives are pending).
        with torch.no_grad():
            expected = theirs(*[torch.from_numpy(a) for a in arrays])
        with ember.no_grad():
            got = ours(*[ember.tensor(a) for a in arrays])
        assert_close(got, expected, rtol=1e-5, atol=1e-5)
        for (key, mine), (_, ref) in zip(ours.state_dict().items(), theirs.state_dict().items(), strict=True):
            assert_close(mine, ref, rtol=1e-5, atol=1e-6), key


@needs_torch
@pytest.mark.parametrize("name,build,inputs,_pending", LAYERS, ids=[spec[0] for spec in LAYERS])
def test_printing_matches_torch(name, build, inputs, _pending):
    theirs, ours = _pair(build)
    assert torch_repr(repr(ours)) == repr(theirs)


def _ember_forward(build, inputs):
    def forward():
        arrays = inputs(np.random.default_rng(1))
        build(enn)(*[ember.tensor(a).requires_grad_(a.dtype.kind == "f") for a in arrays])

    return forward


def _grad_cases():
    for name, build, inputs, _ in LAYERS:
        yield pytest.param(name, build, inputs, id=name, marks=[pending_derivative(_ember_forward(build, inputs))])


@needs_torch
@pytest.mark.parametrize("name,build,inputs", list(_grad_cases()))
def test_gradients_match_torch(name, build, inputs):
    theirs, ours = _pair(build)
    arrays = inputs(np.random.default_rng(1))
    floating = [a.dtype.kind == "f" for a in arrays]
    t_in = [torch.from_numpy(a).requires_grad_(f) for a, f in zip(arrays, floating, strict=True)]
    e_in = [ember.tensor(a).requires_grad_(f) for a, f in zip(arrays, floating, strict=True)]
    t_out, e_out = theirs(*t_in), ours(*e_in)
    weights = np.random.default_rng(2).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.from_numpy(weights)).sum().backward()
    (e_out * ember.tensor(weights)).sum().backward()
    for t, e, f in zip(t_in, e_in, floating, strict=True):
        if f:
            assert_close(e.grad, t.grad, rtol=1e-4, atol=1e-5)
    for (key, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5), key


@needs_torch
def test_dropout_in_training_zeroes_and_rescales():
    layer = enn.Dropout(0.25)
    x = ember.ones(4000)
    y = layer(x).numpy()
    kept = y != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert torch_repr(repr(layer)) == repr(torch.nn.Dropout(0.25))
    layer.eval()
    assert (layer(x).numpy() == 1).all()


@needs_torch
def test_conv_transpose_output_size_picks_the_output_padding():
    theirs, ours = _pair(lambda nn: nn.ConvTranspose2d(2, 2, 3, stride=2))
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    with ember.no_grad():
        got = ours(ember.tensor(x), output_size=[10, 10])
    assert_close(got, theirs(torch.from_numpy(x), output_size=[10, 10]))
    with pytest.raises(ValueError, match="requested an output size of"):
        ours(ember.tensor(x), output_size=[12, 12])


@needs_torch
def test_loss_modules_match_torch():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((5, 4)).astype(np.float32)
    classes = rng.integers(0, 4, 5)
    probs = (1 / (1 + np.exp(-logits))).astype(np.float32)
    target = rng.random((5, 4)).astype(np.float32)
    weight = rng.random(4).astype(np.float32)
    cases = [
        ("CrossEntropyLoss", dict(label_smoothing=0.1), logits, classes),
        ("CrossEntropyLoss", dict(weight=weight, ignore_index=1), logits, classes),
        ("NLLLoss", dict(reduction="sum"), logits, classes),
        ("MSELoss", {}, logits, target),
        ("L1Loss", dict(reduction="none"), logits, target),
        ("SmoothL1Loss", dict(beta=0.5), logits, target),
        ("HuberLoss", dict(delta=0.7), logits * 2, target),
        ("HuberLoss", dict(reduction="sum"), logits * 2, target),
        ("BCELoss", dict(weight=weight), probs, target),
        ("BCEWithLogitsLoss", dict(pos_weight=weight), logits, target),
        ("KLDivLoss", dict(reduction="batchmean", log_target=False), np.log(probs), target),
    ]
    for name, kwargs, x, y in cases:
        t_kwargs = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        e_kwargs = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        theirs, ours = getattr(torch.nn, name)(**t_kwargs), getattr(enn, name)(**e_kwargs)
        assert torch_repr(repr(ours)) == repr(theirs)
        expected = theirs(torch.from_numpy(x), torch.from_numpy(y))
        assert_close(ours(ember.tensor(x), ember.tensor(y)), expected, rtol=1e-5, atol=1e-6)
        assert list(ours.state_dict()) == list(theirs.state_dict())


def test_layer_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        enn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        enn.Conv2d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        enn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        enn.BatchNorm2d(3)(ember.ones(2, 3, 4))
    with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got 1\.5"):
        enn.Dropout(1.5)


def test_default_initialization_bounds():
    layer = enn.Linear(16, 8).requires_grad_(False)
    bound = 1 / 4
    assert np.abs(layer.weight.numpy()).max() <= bound and np.abs(layer.bias.numpy()).max() <= bound
    assert np.abs(layer.weight.numpy()).max() > bound / 2  # not all zeros or a tiny range
    conv = enn.Conv2d(2, 3, 3).requires_grad_(False)
    assert np.abs(conv.weight.numpy()).max() <= 1 / np.sqrt(18)
    emb = enn.Embedding(50, 20, padding_idx=0).requires_grad_(False)
    assert (emb.weight.numpy()[0] == 0).all()
    assert 0.8 < emb.weight.numpy()[1:].std() < 1.2
    bn = enn.BatchNorm1d(3).requires_grad_(False)
    assert bn.num_batches_tracked.dtype is ember.int64
    assert (bn.weight.numpy() == 1).all() and (bn.running_var.numpy() == 1).all()


@needs_torch
def test_batch_norm_twice_before_one_backward_matches_pytorch():
    # A layer used twice in one graph (a siamese network): its own update of the running statistics
    # leaves their version as it is, so the first use's saved statistics still unpack. A user's
    # in-place change of them is still a modification, as in PyTorch.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    y = rng.standard_normal((3, 3, 4, 4)).astype(np.float32) + 1
    grads, stats = [], []
    for lib in (ember, torch):
        bn = lib.nn.BatchNorm2d(3)
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        version = bn.running_mean._version
        ((bn(a) * 2).sum() + (bn(b) ** 2).sum()).backward()
        assert bn.running_mean._version == version
        grads.append((a.grad.numpy(), b.grad.numpy(), bn.weight.grad.numpy()))
        stats.append((bn.running_mean.numpy(), bn.running_var.numpy()))
        out = bn(a)
        with lib.no_grad():
            bn.running_var.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
    for ours, theirs in zip(grads[0] + stats[0], grads[1] + stats[1], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
