"""ATen's top-level forms against PyTorch's: embedding_bag's four outputs, the int-coded grid
samplers, affine_grid_generator, the generic convolution, conv_tbc and feature dropout."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

DTYPES = [("float32", 1e-5), ("float64", 1e-12)]


def _pair(a: np.ndarray, grad: bool = False):
    return ember.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _close(ours, theirs, tol: float) -> None:
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


# -- embedding_bag ---------------------------------------------------------------------------------

INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 4])
OFFSETS = np.array([0, 4, 4, 8])


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 4, -6])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_outputs_and_gradient(dtype, tol, mode, padding_idx, include_last_offset):
    rng = np.random.default_rng(0)
    w, tw = _pair(rng.standard_normal((10, 3)).astype(dtype), grad=True)
    offsets = np.append(OFFSETS, len(INDICES)) if include_last_offset else OFFSETS
    args = (False, mode, False, None, include_last_offset, padding_idx)
    ours = ember.embedding_bag(w, ember.tensor(INDICES), ember.tensor(offsets), *args)
    theirs = torch.embedding_bag(tw, torch.tensor(INDICES), torch.tensor(offsets), *args)
    _close(ours[0], theirs[0], tol)
    for a, t in zip(ours[1:], theirs[1:], strict=True):
        assert a.dtype == ember.int64
        np.testing.assert_array_equal(a.numpy(), t.numpy())
    g = rng.standard_normal(tuple(theirs[0].shape)).astype(dtype)
    (ours[0] * ember.tensor(g)).sum().backward()
    (theirs[0] * torch.tensor(g)).sum().backward()
    _close(w.grad, tw.grad, tol)


def test_embedding_bag_per_sample_weights_and_int32_indices():
    rng = np.random.default_rng(1)
    w, tw = _pair(rng.standard_normal((10, 3)), grad=True)
    psw, tpsw = _pair(rng.random(len(INDICES)), grad=True)
    idx, off = INDICES.astype(np.int32), OFFSETS.astype(np.int32)
    ours = ember.embedding_bag(w, ember.tensor(idx), ember.tensor(off), False, 0, False, psw)
    theirs = torch.embedding_bag(tw, torch.tensor(idx), torch.tensor(off), False, 0, False, tpsw)
    _close(ours[0], theirs[0], 1e-12)
    for a, t in zip(ours[1:], theirs[1:], strict=True):
        assert a.dtype == ember.int32
        np.testing.assert_array_equal(a.numpy(), t.numpy())
    ours[0].pow(2).sum().backward()
    theirs[0].pow(2).sum().backward()
    _close(w.grad, tw.grad, 1e-12)
    _close(psw.grad, tpsw.grad, 1e-12)


@pytest.mark.parametrize("mode", [0, 1])
def test_embedding_bag_scale_grad_by_freq(mode):
    # Each row's gradient is divided by its index's count in the whole batch: what embedding with
    # scale_grad_by_freq, folded into bags, gives. (PyTorch 2.13's CPU embedding_bag divides some rows by
    # another index's count, pytorch/pytorch#190063, so its embedding is the oracle here.)
    rng = np.random.default_rng(12)
    w, tw = _pair(rng.standard_normal((10, 3)), grad=True)
    ours = ember.embedding_bag(w, ember.tensor(INDICES), ember.tensor(OFFSETS), True, mode)[0]
    rows = torch.nn.functional.embedding(torch.tensor(INDICES), tw, scale_grad_by_freq=True)
    bag = torch.tensor([0, 0, 0, 0, 2, 2, 2, 2, 3, 3])
    theirs = torch.zeros(4, 3, dtype=torch.float64).index_add(0, bag, rows)
    if mode == 1:
        theirs = theirs / torch.tensor([4.0, 1.0, 4.0, 2.0]).unsqueeze(1)
    _close(ours, theirs, 1e-12)
    g = rng.standard_normal((4, 3))
    (ours * ember.tensor(g)).sum().backward()
    (theirs * torch.tensor(g)).sum().backward()
    _close(w.grad, tw.grad, 1e-12)


def test_embedding_bag_sparse_gradient():
    rng = np.random.default_rng(13)
    w, tw = _pair(rng.standard_normal((10, 3)), grad=True)
    ours = ember.embedding_bag(w, ember.tensor(INDICES), ember.tensor(OFFSETS), False, 1, True)[0]
    theirs = torch.embedding_bag(tw, torch.tensor(INDICES), torch.tensor(OFFSETS), False, 1, True)[0]
    ours.pow(2).sum().backward()
    theirs.pow(2).sum().backward()
    assert w.grad.is_sparse and tw.grad.is_sparse
    _close(w.grad.to_dense(), tw.grad.to_dense(), 1e-12)


def test_embedding_bag_keyword_defaults():
    w = np.random.default_rng(2).standard_normal((10, 3)).astype(np.float32)
    ours = ember.embedding_bag(ember.tensor(w), ember.tensor(INDICES), ember.tensor(OFFSETS), mode=1)
    theirs = torch.embedding_bag(torch.tensor(w), torch.tensor(INDICES), torch.tensor(OFFSETS), mode=1)
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"mode": 3}, "`mode` must be sum, mean, or max"),
        ({"mode": 1, "psw": True}, "per_sample_weights only supported with mode='sum'"),
        ({"float_indices": True}, "to have one of the following scalar types: Long, Int"),
        ({"offsets": [1, 4]}, "offsets\\[0\\] has to be 0"),
    ],
)
def test_embedding_bag_errors(change, match):
    def call(lib):
        w = lib.ones(10, 3)
        idx = lib.tensor(INDICES)
        if change.get("float_indices"):
            idx = idx.float()
        off = lib.tensor(change.get("offsets", OFFSETS))
        psw = lib.ones(len(INDICES)) if change.get("psw") else None
        return lib.embedding_bag(w, idx, off, False, change.get("mode", 0), False, psw)

    with pytest.raises(RuntimeError, match=match):
        call(torch)
    with pytest.raises(RuntimeError, match=match):
        call(ember)


def test_embedding_bag_index_out_of_range_is_a_runtime_error():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.embedding_bag(lib.ones(10, 3), lib.tensor(INDICES + 5), lib.tensor(OFFSETS), False, 0)


# -- grid sampling ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("interpolation", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_2d(dtype, tol, interpolation, padding, align_corners):
    rng = np.random.default_rng(3)
    x, tx = _pair(rng.standard_normal((2, 3, 4, 5)).astype(dtype), grad=True)
    g, tg = _pair((rng.random((2, 3, 4, 2)) * 2.4 - 1.2).astype(dtype), grad=True)
    for ours_fn, theirs_fn in (
        (ember.grid_sampler, torch.grid_sampler),
        (ember.grid_sampler_2d, torch.grid_sampler_2d),
    ):
        ours = ours_fn(x, g, interpolation, padding, align_corners)
        theirs = theirs_fn(tx, tg, interpolation, padding, align_corners)
        _close(ours, theirs, 10 * tol)
    ours.pow(2).sum().backward()
    theirs.pow(2).sum().backward()
    _close(x.grad, tx.grad, 100 * tol)
    if interpolation != 1:  # nearest has no gradient with respect to the grid
        _close(g.grad, tg.grad, 1e3 * tol)


@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_3d(interpolation, padding):
    rng = np.random.default_rng(4)
    x, tx = _pair(rng.standard_normal((2, 2, 3, 4, 5)), grad=True)
    g, tg = _pair(rng.random((2, 2, 3, 2, 3)) * 2.4 - 1.2, grad=True)
    for ours_fn, theirs_fn in (
        (ember.grid_sampler, torch.grid_sampler),
        (ember.grid_sampler_3d, torch.grid_sampler_3d),
    ):
        ours = ours_fn(x, g, interpolation, padding, False)
        theirs = theirs_fn(tx, tg, interpolation, padding, False)
        _close(ours, theirs, 1e-12)
    ours.pow(2).sum().backward()
    theirs.pow(2).sum().backward()
    _close(x.grad, tx.grad, 1e-10)
    if interpolation == 0:
        _close(g.grad, tg.grad, 1e-9)


@pytest.mark.parametrize(
    ("fn", "x_shape", "g_shape", "mode", "match"),
    [
        ("grid_sampler_2d", (2, 3, 4, 5, 6), (2, 3, 3, 3, 3), 0, "expected 4D input"),
        ("grid_sampler_3d", (2, 3, 4, 5), (2, 3, 3, 2), 0, "expected 5D input"),
        ("grid_sampler_3d", (2, 3, 4, 5, 6), (2, 3, 3, 3, 3), 2, "bicubic interpolation only supports 4D input"),
        ("grid_sampler", (2, 3, 4, 5), (2, 3, 3, 3, 3), 0, "expected grid to have size 2 in last dimension"),
        ("grid_sampler_2d", (2, 3, 4, 5), (2, 3, 3, 2, 2), 0, "same number of dimensions"),
        ("grid_sampler", (2, 3, 4, 5), (1, 3, 3, 2), 0, "same batch size"),
    ],
)
def test_grid_sampler_errors(fn, x_shape, g_shape, mode, match):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=match):
            getattr(lib, fn)(lib.zeros(x_shape), lib.zeros(g_shape), mode, 0, False)


def test_grid_sampler_rejects_unknown_mode_codes():
    # PyTorch's CPU kernel reads such codes as undefined behaviour; they are refused here.
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        ember.grid_sampler(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2), 3, 0, False)
    with pytest.raises(RuntimeError, match="padding_mode"):
        ember.grid_sampler(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2), 0, 3, False)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 3, 1, 5], [2, 3, 4, 5, 6]])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_generator(dtype, tol, size, align_corners):
    k = len(size) - 2
    theta, ttheta = _pair(np.random.default_rng(5).standard_normal((2, k, k + 1)).astype(dtype), grad=True)
    ours = ember.affine_grid_generator(theta, size, align_corners)
    theirs = torch.affine_grid_generator(ttheta, size, align_corners)
    _close(ours, theirs, tol)
    ours.pow(2).sum().backward()
    theirs.pow(2).sum().backward()
    _close(theta.grad, ttheta.grad, 100 * tol)


@pytest.mark.parametrize(
    ("theta", "size", "match"),
    [
        ((2, 2, 3), [2, 3, 4], "needs 4d \\(spatial\\) or 5d \\(volumetric\\) inputs"),
        ((2, 2, 3), [2, 3, 4, 5, 6], "Expected size for first two dimensions of batch2 tensor"),
        ((2, 2, 3), [3, 3, 4, 5], "Expected size for first two dimensions of batch2 tensor"),
    ],
)
def test_affine_grid_generator_errors(theta, size, match):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=match):
            lib.affine_grid_generator(lib.zeros(theta), size, False)


# -- convolution -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "stride", "padding", "dilation", "transposed", "output_padding", "groups"),
    [
        ((2, 4, 7), (6, 2, 3), [2], [1], [1], False, [0], 2),
        ((2, 3, 6, 5), (4, 3, 2, 3), [1, 2], [1, 0], [2, 1], False, [0, 0], 1),
        ((2, 4, 5, 4), (4, 3, 3, 2), [2, 1], [1, 1], [1, 1], True, [1, 0], 2),
        ((1, 2, 3, 4, 3), (3, 2, 2, 2, 2), [1, 1, 1], [0, 1, 0], [1, 1, 1], False, [0, 0, 0], 1),
    ],
)
def test_convolution(dtype, tol, x_shape, w_shape, stride, padding, dilation, transposed, output_padding, groups):
    rng = np.random.default_rng(6)
    x, tx = _pair(rng.standard_normal(x_shape).astype(dtype), grad=True)
    w, tw = _pair(rng.standard_normal(w_shape).astype(dtype), grad=True)
    out_channels = w_shape[1] * groups if transposed else w_shape[0]
    b, tb = _pair(rng.standard_normal(out_channels).astype(dtype), grad=True)
    args = (stride, padding, dilation, transposed, output_padding, groups)
    ours = ember.convolution(x, w, b, *args)
    theirs = torch.convolution(tx, tw, tb, *args)
    _close(ours, theirs, 10 * tol)
    ours.pow(2).sum().backward()
    theirs.pow(2).sum().backward()
    for a, t in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, t.grad, 100 * tol)
    _close(ember.convolution(x, w, None, *args), torch.convolution(tx, tw, None, *args), 10 * tol)


def test_convolution_channel_mismatch_is_a_runtime_error():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.convolution(lib.zeros(2, 3, 5), lib.zeros(4, 2, 2), None, [1], [0], [1], False, [0], 1)


@pytest.mark.parametrize(("dtype", "tol"), DTYPES)
@pytest.mark.parametrize("pad", [0, 2])
def test_conv_tbc(dtype, tol, pad):
    rng = np.random.default_rng(7)
    x, tx = _pair(rng.standard_normal((6, 2, 3)).astype(dtype), grad=True)
    w, tw = _pair(rng.standard_normal((3, 3, 4)).astype(dtype), grad=True)
    b, tb = _pair(rng.standard_normal(4).astype(dtype), grad=True)
    ours, theirs = ember.conv_tbc(x, w, b, pad), torch.conv_tbc(tx, tw, tb, pad)
    _close(ours, theirs, 10 * tol)
    ours.pow(2).sum().backward()
    theirs.pow(2).sum().backward()
    for a, t in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, t.grad, 100 * tol)


# -- feature dropout -------------------------------------------------------------------------------


@pytest.mark.parametrize("inplace", [False, True])
def test_feature_dropout_drops_whole_channels(inplace):
    fn = ember.feature_dropout_ if inplace else ember.feature_dropout
    x = ember.ones(16, 32, 3, 2)
    out = fn(x, 0.25, True)
    assert (out is x) == inplace
    values = out.numpy().reshape(16, 32, -1)
    per_channel = values[..., :1]
    assert np.all(values == per_channel)  # one draw per (sample, channel)
    kept = per_channel != 0
    np.testing.assert_allclose(per_channel[kept], 1 / 0.75)
    assert 0.5 < kept.mean() < 0.95  # 512 draws at 3/4: far inside these bounds


def test_feature_dropout_gradient_is_the_mask():
    x = ember.randn(4, 5, 3, requires_grad=True)
    out = ember.feature_dropout(x, 0.5, True)
    out.sum().backward()
    mask = out.detach() / x.detach()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy(), rtol=1e-6)


def test_feature_dropout_outside_training_and_errors():
    for lib in (torch, ember):
        x = lib.randn(3, 4)
        assert lib.feature_dropout(x, 0.5, False) is x
        assert lib.feature_dropout_(x, 0.5, False) is x
        assert lib.feature_dropout(lib.randn(3), 0.5, False).shape == (3,)
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
            lib.feature_dropout(lib.randn(3), 0.5, True)
        with pytest.raises(RuntimeError, match=r"dropout probability has to be between 0 and 1, but got 1\.5"):
            lib.feature_dropout(x, 1.5, True)
        np.testing.assert_array_equal(np.asarray(lib.feature_dropout(x, 1.0, True).tolist()), np.zeros((3, 4)))
