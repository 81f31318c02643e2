"""Gradients of the neural-network ops beyond the OpInfo tables, against PyTorch: convolutions over
strides, padding, dilation, groups and transposition; pools with ceil_mode and their divisors;
losses with weights, ignore_index, label smoothing and every reduction; batch norm in training and
evaluation with its running statistics; padding, upsampling, embedding and dropout; refusals of
arguments PyTorch does not differentiate; double backward. float64 and float32.
"""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

A = ember.ops.aten
TOL = {"float64": (1e-10, 1e-12), "float32": (2e-4, 2e-5)}


def _numpy(t):
    return np.asarray(t.detach().numpy())


def _aten(lib):
    return lib.ops.aten


def grads(fn, arrays, differentiable, dtype="float64", seed=0, create_graph=False):
    """``fn(lib, *tensors)`` in Ember and PyTorch; outputs and input gradients for random cotangents."""
    results = []
    for lib in (ember, torch):
        inputs = []
        for a, d in zip(arrays, differentiable, strict=True):
            if a is None:
                inputs.append(None)
                continue
            a = np.asarray(a)
            t = lib.tensor(a.astype(dtype) if a.dtype.kind == "f" else a)
            inputs.append(t.requires_grad_(True) if d else t)
        out = fn(lib, *inputs)
        outs = [o for o in (out if isinstance(out, tuple | list) else (out,)) if o.requires_grad]
        rng = np.random.default_rng(seed)
        cots = [lib.tensor(rng.standard_normal(tuple(o.shape)).astype(dtype)) for o in outs]
        wrt = [t for t, d in zip(inputs, differentiable, strict=True) if d]
        g = lib.autograd.grad(outs, wrt, cots, allow_unused=True, create_graph=create_graph)
        if create_graph:  # once more: the gradient of the sum of squared first gradients
            total = sum((x * x).sum() for x in g if x is not None)
            g = lib.autograd.grad(total, wrt, allow_unused=True)
        results.append([_numpy(o) for o in outs] + [None if x is None else _numpy(x) for x in g])
    return results


def check(fn, arrays, differentiable, dtype="float64", create_graph=False, tol=None):
    ours, theirs = grads(fn, arrays, differentiable, dtype, create_graph=create_graph)
    rtol, atol = tol or TOL[dtype]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape)


# -- matrix products ---------------------------------------------------------------------------------------


def test_addmm_and_baddbmm_scale_by_alpha_and_beta():
    check(
        lambda lib, s, a, b: lib.addmm(s, a, b, beta=0.5, alpha=-2.0), [randn(3), randn(2, 4), randn(4, 3)], [1, 1, 1]
    )
    check(
        lambda lib, s, a, b: lib.baddbmm(s, a, b, beta=3.0, alpha=0.25),
        [randn(2, 1, 5), randn(2, 3, 4), randn(2, 4, 5)],
        [1, 1, 1],
    )


def test_addmm_with_beta_zero_gives_self_zeros_even_where_self_is_nan():
    s = np.full((2, 3), np.nan)
    check(lambda lib, s, a, b: lib.addmm(s, a, b, beta=0), [s, randn(2, 4), randn(4, 3)], [1, 1, 1])


def test_vector_products():
    check(lambda lib, a, b: lib.vdot(a, b), [randn(5), randn(5)], [1, 1])
    check(lambda lib, a, b: lib.dot(a, b), [randn(5), randn(5)], [1, 0])
    check(lambda lib, m, v: lib.mv(m, v), [randn(3, 5), randn(5)], [1, 1], "float32")


def test_inplace_addmm_on_a_non_leaf():
    def fn(lib, s, a, b):
        t = s * 1.0
        return t.addmm_(a, b, alpha=2.0)

    check(fn, [randn(3, 3), randn(3, 2), randn(2, 3)], [1, 1, 1])


# -- convolution -------------------------------------------------------------------------------------------

CONV_CASES = [
    # (input shape, weight shape, stride, padding, dilation, groups, transposed, output_padding)
    ((2, 4, 7, 8), (6, 2, 3, 2), [2, 1], [1, 0], [1, 2], 2, False, [0, 0]),
    ((2, 4, 9, 6), (4, 1, 3, 3), [3, 2], [2, 1], [2, 1], 4, False, [0, 0]),
    ((1, 3, 5, 5), (6, 3, 1, 1), [2, 2], [0, 0], [1, 1], 1, False, [0, 0]),
    ((2, 4, 11), (6, 2, 4), [3], [2], [2], 2, False, [0]),
    ((2, 4, 4, 5), (4, 3, 3, 2), [2, 3], [1, 0], [1, 2], 2, True, [1, 2]),
    ((2, 2, 6), (2, 3, 3), [2], [1], [3], 1, True, [2]),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{'T' if c[6] else ''}{len(c[0]) - 2}d-s{c[2]}-g{c[5]}")
def test_convolution_input_weight_and_bias(case, dtype):
    shape, wshape, stride, padding, dilation, groups, transposed, output_padding = case
    channels = wshape[1] * groups if transposed else wshape[0]

    def fn(lib, x, w, b):
        return _aten(lib).convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)

    check(fn, [randn(*shape), randn(*wshape), randn(channels)], [1, 1, 1], dtype)


@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[3], CONV_CASES[4]], ids=["2d", "1d", "T2d"])
def test_convolution_double_backward(case):
    # convolution_backward's decomposition is what gets recorded.
    shape, wshape, stride, padding, dilation, groups, transposed, output_padding = case
    channels = wshape[1] * groups if transposed else wshape[0]

    def fn(lib, x, w, b):
        return _aten(lib).convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)

    check(fn, [randn(*shape), randn(*wshape), randn(channels)], [1, 1, 1], create_graph=True)


def test_convolution_without_bias_and_only_some_gradients():
    def fn(lib, x, w):
        return _aten(lib).convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)

    check(fn, [randn(2, 3, 5, 5), randn(4, 3, 3, 3)], [0, 1])
    check(fn, [randn(2, 3, 5, 5), randn(4, 3, 3, 3)], [1, 0])


def test_conv2d_of_a_channels_last_input_with_same_padding():
    x, w, b = randn(2, 6, 5, 3), randn(4, 3, 3, 3), randn(4)
    results = []
    for lib in (ember, torch):
        xt = lib.tensor(x).permute(0, 3, 1, 2).requires_grad_(True)  # NHWC memory, NCHW shape
        wt, bt = lib.tensor(w).requires_grad_(True), lib.tensor(b).requires_grad_(True)
        out = lib.conv2d(xt, wt, bt, padding="same")
        cot = lib.tensor(np.random.default_rng(0).standard_normal(tuple(out.shape)))
        results.append([_numpy(g) for g in lib.autograd.grad(out, [xt, wt, bt], cot)])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# -- pooling -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool_overlapping_windows_and_ceil_mode(ceil_mode):
    x = randn(2, 3, 7, 8)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = 5.0  # a tie: the first maximum takes the gradient

    def fn(lib, x):
        return _aten(lib).max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 2], ceil_mode)

    check(fn, [x], [1])
    check(fn, [x], [1], "float32")


def test_max_pool_gradient_differentiates_in_the_output_gradient():
    # max_pool2d_with_indices_backward's decomposition is what gets recorded under create_graph.
    x = randn(2, 3, 7, 8)
    results = []
    for lib in (ember, torch):
        xt = lib.tensor(x).requires_grad_(True)
        out = _aten(lib).max_pool2d_with_indices(xt, [3, 3], [2, 2], [1, 1], [1, 1], False)[0]
        cot = lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape))).requires_grad_(True)
        (gx,) = lib.autograd.grad(out, xt, cot, create_graph=True)
        (gg,) = lib.autograd.grad((gx * gx).sum(), cot)
        results.append((_numpy(gx), _numpy(gg)))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "ceil_mode,count_include_pad,divisor",
    [(False, True, None), (True, True, None), (True, False, None), (True, False, 3)],
)
def test_avg_pool_divisors(ceil_mode, count_include_pad, divisor):
    def fn(lib, x):
        return _aten(lib).avg_pool2d(x, [3, 2], [2, 2], [1, 1], ceil_mode, count_include_pad, divisor)

    check(fn, [randn(2, 3, 6, 7)], [1])


def test_adaptive_avg_pool_with_overlapping_windows():
    check(lambda lib, x: _aten(lib)._adaptive_avg_pool2d(x, [4, 3]), [randn(2, 3, 7, 5)], [1])
    check(lambda lib, x: _aten(lib)._adaptive_avg_pool2d(x, [9, 2]), [randn(3, 5, 5)], [1], "float32")


# -- losses ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss_weights_and_ignore_index(reduction):
    logp = np.log(RNG.dirichlet(np.ones(5), size=6))
    target = np.array([0, 4, 2, 2, 1, 3])
    weight = RNG.uniform(0.5, 2, 5)

    def fn(lib, x, t, w):
        return _aten(lib).nll_loss_forward(x, t, w, reduction, 2)

    check(fn, [logp, target, weight], [1, 0, 0])
    check(fn, [logp, target, None], [1, 0, 0], "float32")


def _functional(lib):
    if lib is ember:
        from ember.core import functional

        return functional
    return torch.nn.functional


def test_nll_loss_of_spatial_inputs_and_one_row():
    x, t, w = randn(2, 4, 3, 2), RNG.integers(0, 4, (2, 3, 2)), RNG.uniform(0.5, 2, 4)
    for reduction in ("none", "mean"):
        check(lambda lib, x, t, w, r=reduction: _functional(lib).nll_loss(x, t, w, reduction=r), [x, t, w], [1, 0, 0])
    check(lambda lib, x, t: _aten(lib).nll_loss_forward(x, t, None, 0, 1), [randn(4), np.array(3)], [1, 0])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_smoothing_weights_ignore_index(reduction):
    def fn(lib, x, t, w):
        return _functional(lib).cross_entropy(x, t, w, ignore_index=1, reduction=reduction, label_smoothing=0.3)

    check(fn, [randn(5, 4), np.array([0, 1, 3, 1, 2]), RNG.uniform(0.5, 2, 4)], [1, 0, 0])


def test_cross_entropy_mean_with_every_target_ignored_gives_zero_gradients():
    def fn(lib, x, t):
        return _functional(lib).cross_entropy(x, t, ignore_index=1, label_smoothing=0.2)

    check(fn, [randn(3, 4), np.array([1, 1, 1])], [1, 0])


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_pair_losses_in_both_arguments(reduction):
    x, t = randn(3, 4), randn(3, 4)
    t[0, :2] = x[0, :2]  # equal operands: smooth_l1's boundary cases
    t[1, 0] = x[1, 0] - 0.5
    check(lambda lib, a, b: _aten(lib).mse_loss(a, b, reduction), [x, t], [1, 1])
    for beta in (0.0, 0.5):
        check(lambda lib, a, b, beta=beta: _aten(lib).smooth_l1_loss(a, b, reduction, beta), [x, t], [1, 1])
    check(lambda lib, a, b: _aten(lib).kl_div(a, b, reduction, log_target=True), [x, t], [1, 1])
    probabilities = np.abs(t)
    probabilities[2, 3] = 0.0  # xlogy's NaN gradient at a zero target
    check(lambda lib, a, b: _aten(lib).kl_div(a, b, reduction), [x, probabilities], [1, 1])


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_binary_cross_entropy_at_the_clamps_and_with_weights(reduction):
    p = np.array([[0.0, 1.0, 0.5, 0.2, 1e-30], [0.9, 0.3, 0.7, 0.999, 0.01]])
    t = np.array([[0.0, 0.0, 0.5, 1.0, 1.0], [1.0, 0.0, 0.2, 0.5, 0.0]])
    w = RNG.uniform(0.5, 2, (2, 5))
    check(lambda lib, a, b, w: _aten(lib).binary_cross_entropy(a, b, w, reduction), [p, t, w], [1, 1, 0])
    check(lambda lib, a, b: _aten(lib).binary_cross_entropy(a, b, None, reduction), [p, t], [1, 1], "float32")


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_binary_cross_entropy_with_logits_weights_and_pos_weight(reduction):
    x, t = randn(3, 4) * 10, RNG.uniform(0, 1, (3, 4))
    pw, w = RNG.uniform(0, 3, 4), RNG.uniform(0, 3, (3, 1))
    fn = _aten_bcel(reduction)
    check(fn, [x, t, w, pw], [1, 1, 0, 0])
    check(fn, [x, t, None, None], [1, 1, 0, 0])
    check(fn, [x, t, w, pw], [1, 1, 0, 0], "float32")


def _aten_bcel(reduction):
    return lambda lib, a, b, w, pw: _aten(lib).binary_cross_entropy_with_logits(a, b, w, pw, reduction)


@pytest.mark.parametrize(
    "call,argument",
    [
        (lambda x, t, w: A.binary_cross_entropy(x, t, w, 1), "weight"),
        (lambda x, t, w: A.binary_cross_entropy_with_logits(x, t, w, None, 1), "weight"),
        (lambda x, t, w: A.binary_cross_entropy_with_logits(x, t, None, w, 1), "pos_weight"),
    ],
)
def test_loss_weights_refuse_to_require_grad(call, argument):
    x = ember.rand(4, dtype=ember.float64)
    t = ember.rand(4, dtype=ember.float64)
    w = ember.rand(4, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"not differentiable with respect to argument '{argument}'"):
        call(x, t, w)
    with ember.no_grad():
        call(x, t, w)  # outside grad mode there is nothing to refuse


def test_nll_loss_refuses_a_weight_that_requires_grad():
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.rand(4, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="'nll_loss_forward' is not differentiable with respect to argument 'weight'"
    ):
        A.nll_loss_forward(x, ember.tensor([0, 1, 2]), w, 1, -100)


# -- normalization ------------------------------------------------------------------------------------------


def _batch_norm(training, with_stats=True):
    def fn(lib, x, w, b, mean, var):
        if with_stats:
            out = _aten(lib)._native_batch_norm_legit(x, w, b, mean, var, training, 0.1, 1e-5)
        else:
            out = _aten(lib)._native_batch_norm_legit(x, w, b, training, 0.1, 1e-5)
        return out[0]

    return fn


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_training_and_eval(training, dtype):
    arrays = [randn(4, 3, 5, 2), randn(3), randn(3), randn(3), RNG.uniform(0.5, 2, 3)]
    check(_batch_norm(training), arrays, [1, 1, 1, 0, 0], dtype)
    check(_batch_norm(training), [arrays[0], None, None, arrays[3], arrays[4]], [1, 0, 0, 0, 0], dtype)


def _batch_norm_no_training(lib, x, w, b, mean, var):
    return _aten(lib)._native_batch_norm_legit_no_training(x, w, b, mean, var, 0.1, 1e-5)[0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batch_norm_no_training(dtype):
    arrays = [randn(4, 3, 5, 2), randn(3), randn(3), randn(3), RNG.uniform(0.5, 2, 3)]
    check(_batch_norm_no_training, arrays, [1, 1, 1, 0, 0], dtype)
    check(_batch_norm_no_training, [arrays[0], None, None, arrays[3], arrays[4]], [1, 0, 0, 0, 0], dtype)
    check(_batch_norm_no_training, arrays, [1, 1, 1, 0, 0], "float64", create_graph=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_double_backward(training):
    # The backward kernel's decomposition is what gets recorded: in training it must carry the
    # statistics' dependence on the input.
    arrays = [randn(4, 3, 5, 2), randn(3), randn(3), randn(3), RNG.uniform(0.5, 2, 3)]
    check(_batch_norm(training), arrays, [1, 1, 1, 0, 0], "float64", create_graph=True)
    if training:  # (in evaluation dx = grad * invstd does not depend on x: nothing to differentiate again)
        check(_batch_norm(training), [arrays[0], None, None, arrays[3], arrays[4]], [1, 0, 0, 0, 0], create_graph=True)


def test_batch_norm_without_running_statistics():
    check(_batch_norm(True, with_stats=False), [randn(5, 3), randn(3), randn(3), None, None], [1, 1, 1, 0, 0])


def test_batch_norm_updates_running_statistics_as_pytorch():
    x, mean, var = randn(4, 3, 5), randn(3), RNG.uniform(0.5, 2, 3)
    results = []
    for lib in (ember, torch):
        m, v = lib.tensor(mean), lib.tensor(var)
        xt = lib.tensor(x).requires_grad_(True)
        out = _aten(lib)._native_batch_norm_legit(xt, None, None, m, v, True, 0.3, 1e-5)[0]
        # the op's own update of the statistics does not invalidate its backward
        out.backward(lib.tensor(np.random.default_rng(3).standard_normal(x.shape)))
        results.append([_numpy(m), _numpy(v), _numpy(xt.grad)])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_batch_norm_eval_backward_after_the_running_statistics_change_raises():
    x = ember.randn(4, 3, requires_grad=True)
    mean, var = ember.zeros(3), ember.ones(3)
    out = A._native_batch_norm_legit(x, None, None, mean, var, False, 0.1, 1e-5)[0]
    mean.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_batch_norm_refuses_running_statistics_that_require_grad():
    x = ember.randn(4, 3, requires_grad=True)
    mean = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="with respect to argument 'running_mean'"):
        A._native_batch_norm_legit(x, None, None, mean, ember.ones(3), False, 0.1, 1e-5)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_and_group_norm(dtype):
    check(
        lambda lib, x, w, b: _aten(lib).native_layer_norm(x, [3, 4], w, b, 1e-5)[0],
        [randn(2, 5, 3, 4), randn(3, 4), randn(3, 4)],
        [1, 1, 1],
        dtype,
    )
    # group norm's mean and rstd outputs are differentiable: all three get cotangents
    check(
        lambda lib, x, w, b: _aten(lib).native_group_norm(x, w, b, 2, 6, 6, 3, 1e-5),
        [randn(2, 6, 3, 2), randn(6), randn(6)],
        [1, 1, 1],
        dtype,
    )


def test_softmax_and_log_softmax_along_any_dim():
    for dim in (0, 1, -1):
        check(lambda lib, x, d=dim: lib.softmax(x, d), [randn(3, 4, 5)], [1])
        check(lambda lib, x, d=dim: lib.log_softmax(x, d), [randn(3, 4, 5)], [1], "float32")


def test_cosine_similarity_at_zero_and_tiny_vectors_and_broadcast():
    x1 = randn(4, 3)
    x1[0] = 0.0  # the norm's gradient is 0 there
    x1[1] = 1e-10  # below eps: clamped out of autograd's sight, as PyTorch does
    x2 = randn(4, 3)

    def fn(lib, a, b, dim=1):
        return _functional(lib).cosine_similarity(a, b, dim=dim, eps=1e-8)

    check(fn, [x1, x2], [1, 1], tol=(1e-9, 1e-9))
    check(lambda lib, a, b: _functional(lib).cosine_similarity(a, b, dim=-1), [randn(2, 3), randn(3)], [1, 1])
    check(
        lambda lib, a, b: _functional(lib).cosine_similarity(a, b, dim=0), [randn(5, 2), randn(5, 2)], [1, 1], "float32"
    )


# -- padding, upsampling, embedding, dropout ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_padding_modes(mode):
    def fn(lib, x):
        if lib is ember:
            return A.pad(x, [2, 1, 1, 2], mode)
        return torch.nn.functional.pad(x, [2, 1, 1, 2], mode=mode)

    check(fn, [randn(2, 3, 4, 5)], [1])


def test_negative_pads_crop():
    check(lambda lib, x: _aten(lib).constant_pad_nd(x, [-1, 2, 1, -2], 0.5), [randn(2, 4, 5)], [1])
    check(lambda lib, x: _aten(lib)._pad_circular(x, [-1, 2, 1, -2]), [randn(2, 4, 5)], [1])


@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_upsampling(align_corners):
    def fn(lib, x):
        return _aten(lib).upsample_bilinear2d(x, [7, 3], align_corners)

    check(fn, [randn(2, 3, 4, 5)], [1])
    check(fn, [randn(2, 3, 4, 5)], [1], "float32")


def test_nearest_upsampling_with_scales():
    check(lambda lib, x: _aten(lib).upsample_nearest2d(x, [8, 5], 2.0, 5 / 3), [randn(1, 2, 4, 3)], [1])
    check(lambda lib, x: _aten(lib)._upsample_nearest_exact1d(x, [7], None), [randn(2, 2, 5)], [1])


@pytest.mark.parametrize("padding_idx,scale", [(-1, False), (2, False), (-1, True), (0, True)])
def test_embedding_padding_idx_and_scale_grad_by_freq(padding_idx, scale):
    indices = np.array([[0, 2, 2, 5], [1, 2, 0, 0]])
    check(lambda lib, w, i: _aten(lib).embedding(w, i, padding_idx, scale), [randn(6, 3), indices], [1, 0])


@pytest.mark.parametrize("p", [0.0, 0.4, 1.0])
def test_dropout_gradient_is_its_mask_scaled(p):
    x = ember.randn(5, 6) + 3  # no zeros: the mask is where the output is not zero
    leaf = x.clone().requires_grad_(True)
    out = ember.dropout(leaf, p, True)
    (g,) = ember.autograd.grad(out.sum(), [leaf])
    scale = 0.0 if p == 1 else 1 / (1 - p)
    expected = np.where(_numpy(out) != 0, scale, 0.0)
    np.testing.assert_allclose(_numpy(g), expected, rtol=1e-6)
    output, mask = ember.native_dropout(leaf, p, True)
    (g,) = ember.autograd.grad(output, [leaf], ember.ones_like(output))
    np.testing.assert_allclose(_numpy(g), _numpy(mask) * scale, rtol=1e-6)
    assert not mask.requires_grad


def test_dropout_draws_the_same_numbers_with_and_without_grad():
    x = ember.randn(4, 7)
    ember.manual_seed(11)
    plain = ember.dropout(x, 0.3, True)
    ember.manual_seed(11)
    inner = x.clone().requires_grad_(True) * 1.0
    recorded = ember.dropout_(inner, 0.3, True)
    np.testing.assert_array_equal(_numpy(plain), _numpy(recorded))


# -- double backward -------------------------------------------------------------------------------------------

DOUBLE = {
    "softmax": (lambda lib, x: lib.softmax(x, 1), [randn(3, 4)], [1]),
    "log_softmax": (lambda lib, x: lib.log_softmax(x, 0), [randn(3, 4)], [1]),
    "mse_loss": (lambda lib, a, b: _aten(lib).mse_loss(a, b, 1), [randn(3, 4), randn(3, 4)], [1, 1]),
    "smooth_l1_loss": (lambda lib, a, b: _aten(lib).smooth_l1_loss(a, b, 0, 2.0), [randn(3, 4), randn(3, 4)], [1, 1]),
    "bce_with_logits": (
        lambda lib, a, b: _aten(lib).binary_cross_entropy_with_logits(a, b, None, None, 1),
        [randn(3, 4), RNG.uniform(0, 1, (3, 4))],
        [1, 1],
    ),
    "layer_norm": (
        lambda lib, x, w: _aten(lib).native_layer_norm(x, [4], w, None, 1e-5)[0],
        [randn(3, 4), randn(4)],
        [1, 1],
    ),
    "batch_norm": (_batch_norm(True, with_stats=False), [randn(5, 3), randn(3), randn(3), None, None], [1, 1, 1, 0, 0]),
    "cross_entropy": (
        lambda lib, x, t: _aten(lib).nll_loss_forward(lib.log_softmax(x, 1), t, None, 1, -100)[0],
        [randn(3, 4), np.array([0, 3, 1])],
        [1, 0],
    ),
}


@pytest.mark.parametrize("name", sorted(DOUBLE))
def test_double_backward(name):
    fn, arrays, differentiable = DOUBLE[name]
    check(fn, arrays, differentiable, create_graph=True, tol=(1e-9, 1e-11))


@pytest.mark.parametrize(
    "case",
    ["linear", "linear_bias", "mm_transposed_first", "mm_plain"],
)
def test_matrix_product_gradients_take_their_operands_layout(case):
    """A Linear's weight enters ``mm`` transposed; its gradient is made in that layout (PyTorch's
    ``mm_mat2_backward``), so it comes back contiguous, as the weight, with PyTorch's values and
    strides; likewise the first operand's when it is stored transposed."""
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((5, 4)), rng.standard_normal((6, 4)), rng.standard_normal(6)
    fns = {
        "linear": lambda lib, x, w, b: lib.nn.functional.linear(x, w),
        "linear_bias": lambda lib, x, w, b: lib.nn.functional.linear(x, w, b),
        "mm_transposed_first": lambda lib, x, w, b: lib.mm(x.t().contiguous().t(), w.t()),
        "mm_plain": lambda lib, x, w, b: lib.mm(x, w.t().contiguous()),
    }
    g = rng.standard_normal((5, 6))
    ours = [ember.tensor(a).requires_grad_() for a in (x, w, b)]
    out = fns[case](ember, *ours)
    got = ember.autograd.grad(out, ours[:2], ember.tensor(g))
    if case.startswith("linear"):
        assert got[1].stride() == (4, 1)  # the weight's layout, contiguous
    if torch is None:
        pytest.skip(ORACLE_MISSING)
    theirs = [torch.tensor(a).requires_grad_() for a in (x, w, b)]
    want = torch.autograd.grad(fns[case](torch, *theirs), theirs[:2], torch.tensor(g))
    for a, e in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
        assert a.stride() == e.stride(), (a.stride(), e.stride())
