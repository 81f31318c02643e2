"""AdaptiveLogSoftmaxWithLoss, affine_grid/grid_sample, nn.grad, SyncBatchNorm in one process,
Container and factory_kwargs, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

from breadth_oracle import check_function, check_layer  # noqa: E402

import ember  # noqa: E402


def _adaptive(nn):
    return nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adaptive_log_softmax_matches_torch(dtype):
    def inputs(rng):
        return [rng.standard_normal((6, 8)), np.array([0, 4, 9, 2, 6, 5])]

    check_layer(_adaptive, inputs, dtype, grads=(0,))
    check_layer(_adaptive, lambda rng: [rng.standard_normal(8), np.array(7)], dtype, grads=(0,))
    check_layer(_adaptive, lambda rng: [rng.standard_normal((4, 8))], dtype, call=lambda m, x: m.log_prob(x))
    torch.manual_seed(0)
    theirs, ours = _adaptive(torch.nn), _adaptive(ember.nn)
    ours.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    assert ours.predict(ember.tensor(x)).tolist() == theirs.predict(torch.from_numpy(x)).tolist()
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
            _adaptive(lib.nn)(lib.ones(2, 8), lib.tensor([1, 10]))
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])


@pytest.mark.parametrize("align_corners", [True, False])
def test_affine_grid_matches_torch(align_corners):
    rng = np.random.default_rng(0)
    for theta, size in (
        (rng.standard_normal((2, 2, 3)), (2, 3, 4, 5)),
        (rng.standard_normal((2, 3, 4)), (2, 1, 2, 3, 4)),
    ):
        check_function(
            lambda t, size=size: ember.nn.functional.affine_grid(t, size, align_corners=align_corners),
            lambda t, size=size: torch.nn.functional.affine_grid(t, size, align_corners=align_corners),
            [theta],
        )


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_matches_torch(padding_mode, align_corners):
    rng = np.random.default_rng(1)
    x, grid = rng.standard_normal((2, 3, 5, 6)), rng.uniform(-1.4, 1.4, (2, 4, 7, 2))
    check_function(
        lambda a, g: ember.nn.functional.grid_sample(a, g, "bilinear", padding_mode, align_corners),
        lambda a, g: torch.nn.functional.grid_sample(a, g, "bilinear", padding_mode, align_corners),
        [x, grid],
    )
    check_function(
        lambda a: ember.nn.functional.grid_sample(a, ember.tensor(grid), "nearest", padding_mode, align_corners),
        lambda a: torch.nn.functional.grid_sample(a, torch.tensor(grid), "nearest", padding_mode, align_corners),
        [x],
    )
    check_function(
        lambda a, g: ember.nn.functional.grid_sample(a, g, "bicubic", padding_mode, align_corners),
        lambda a, g: torch.nn.functional.grid_sample(a, g, "bicubic", padding_mode, align_corners),
        [x, grid],
    )


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_volumetric_grid_sample_matches_torch(padding_mode, align_corners):
    rng = np.random.default_rng(2)
    x, grid = rng.standard_normal((2, 3, 4, 5, 6)), rng.uniform(-1.3, 1.3, (2, 3, 4, 2, 3))
    check_function(
        lambda a, g: ember.nn.functional.grid_sample(a, g, "bilinear", padding_mode, align_corners),
        lambda a, g: torch.nn.functional.grid_sample(a, g, "bilinear", padding_mode, align_corners),
        [x, grid],
    )
    check_function(
        lambda a: ember.nn.functional.grid_sample(a, ember.tensor(grid), "nearest", padding_mode, align_corners),
        lambda a: torch.nn.functional.grid_sample(a, torch.tensor(grid), "nearest", padding_mode, align_corners),
        [x],
    )


@pytest.mark.parametrize("k", [1, 2, 3])
def test_nn_grad_matches_torch(k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 4, *([5] * k)))
    w = rng.standard_normal((6, 2, *([2] * k)))
    kwargs = dict(stride=2, padding=1, dilation=1, groups=2)
    out = getattr(torch.nn.functional, f"conv{k}d")(torch.tensor(x), torch.tensor(w), **kwargs)
    g = rng.standard_normal(tuple(out.shape))
    for kind in ("input", "weight"):
        theirs = getattr(torch.nn.grad, f"conv{k}d_{kind}")(
            x.shape if kind == "input" else torch.tensor(x), torch.tensor(w) if kind == "input" else w.shape,
            torch.tensor(g), **kwargs,
        )  # fmt: skip
        ours = getattr(ember.nn.grad, f"conv{k}d_{kind}")(
            x.shape if kind == "input" else ember.tensor(x), ember.tensor(w) if kind == "input" else w.shape,
            ember.tensor(g), **kwargs,
        )  # fmt: skip
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("training", [True, False])
def test_sync_batch_norm_in_one_process_is_batch_norm(training):
    check_layer(lambda nn: nn.SyncBatchNorm(3, momentum=0.2), lambda rng: [rng.standard_normal((4, 3, 2))], "float64",
                training=training)  # fmt: skip
    net = ember.nn.SyncBatchNorm.convert_sync_batchnorm(
        ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3))
    )
    assert type(net[1]) is ember.nn.SyncBatchNorm and repr(net[1]).startswith("SyncBatchNorm(3, eps=1e-05")
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        ember.nn.SyncBatchNorm(3)(ember.ones(3))


def test_container_and_factory_kwargs_match_torch():
    with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
        c = ember.nn.Container(a=ember.nn.Linear(2, 2))
    assert list(dict(c.named_children())) == ["a"]
    for kwargs in ({"device": "cpu", "factory_kwargs": {"dtype": None}}, None):
        assert ember.nn.factory_kwargs(kwargs) == torch.nn.factory_kwargs(kwargs)
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="unexpected kwargs"):
            lib.nn.factory_kwargs({"size": 3})


ERRORS = [
    lambda L: L.nn.functional.conv3d(L.ones(1, 3, 4, 4, 4), L.ones(2, 2, 2, 2, 2)),
    lambda L: L.nn.functional.conv_transpose3d(L.ones(1, 3, 4, 4, 4), L.ones(2, 2, 2, 2, 2)),
    lambda L: L.nn.functional.conv_transpose1d(L.ones(1, 3, 4, 4), L.ones(3, 2, 2)),
    lambda L: L.nn.functional.multi_margin_loss(L.ones(2, 3), L.tensor([0, 3])),
    lambda L: L.nn.functional.multilabel_margin_loss(L.ones(2, 3), L.tensor([[0, 1]])),
    lambda L: L.nn.functional.max_unpool2d(L.ones(1, 1, 2, 2), L.zeros(1, 1, 2, 3, dtype=L.int64), 2),
    lambda L: L.nn.functional.lp_pool2d(L.ones(1, 1, 1, 1), 2, 3),
    lambda L: L.nn.functional.interpolate(L.ones(1, 1, 2, 2), scale_factor=2, mode="trilinear"),
    lambda L: L.nn.functional.affine_grid(L.ones(1, 3, 3), (1, 1, 2, 2), align_corners=False),
    lambda L: L.nn.functional.fractional_max_pool2d(L.ones(1, 1, 5, 4), (1, 3), output_size=3),
    lambda L: L.nn.functional.fractional_max_pool3d(L.ones(1, 1, 4, 4, 4), 3, output_size=3),
    lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 4), use_input_stats=False),
    lambda L: L.nn.LSTMCell(2, 3)(L.ones(4, 3)),
    lambda L: L.nn.GRUCell(2, 3)(L.ones(4, 2), L.ones(3, 3)),
    lambda L: L.nn.RNNCell(2, 3)(L.ones(4, 2), L.ones(4, 2)),
    lambda L: L.nn.functional.avg_pool3d(L.ones(1, 1, 2, 2, 2), 2, divisor_override=0),
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors_are_torch_errors(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(ember)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value).replace("torch.", "ember.")


def test_set_submodule_and_state_dict_pre_hooks_match_torch():
    results = []
    for lib in (torch, ember):
        net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU()))
        net.set_submodule("1.0", lib.nn.Tanh())
        net.set_submodule("1.extra", lib.nn.Identity())
        with pytest.raises(AttributeError, match="has no attribute `missing`"):
            net.set_submodule("1.missing", lib.nn.Identity(), strict=True)
        calls = []
        net.register_state_dict_pre_hook(lambda module, prefix, keep_vars, calls=calls: calls.append(prefix))
        net[1].register_state_dict_pre_hook(lambda module, prefix, keep_vars, calls=calls: calls.append(prefix))
        net.state_dict()
        results.append((repr(net), calls))
    assert results[0] == results[1]


def test_every_layer_is_importable_from_torchs_module_path():
    import importlib
    import inspect
    import pkgutil

    import torch.nn.modules

    missing = []
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        if info.name.startswith("_"):
            continue
        theirs = importlib.import_module(f"torch.nn.modules.{info.name}")
        for name, obj in vars(theirs).items():
            if name.startswith("_") or not inspect.isclass(obj) or obj.__module__ != theirs.__name__:
                continue
            if not hasattr(ember.nn, name):
                continue  # a class ember.nn lacks is api_coverage's business
            try:
                ours = importlib.import_module(f"ember.nn.modules.{info.name}")
            except ImportError:
                ours = None
            if getattr(ours, name, None) is not getattr(ember.nn, name):
                missing.append(f"ember.nn.modules.{info.name}.{name}")
    assert not missing
