"""The nn ops beyond the OpInfo tables: decompositions against the CPU kernels, the ``torch.X`` names,
warnings of ``torch.nn.functional``, in-place effects and float64 references."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember
import ember.core.functional as F
from ember.ops import aten

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)
RNG = np.random.default_rng(7)


def _x(*shape, dtype=np.float32):
    return ember.from_numpy(RNG.standard_normal(shape).astype(dtype))


def _values(t):
    return t.float().numpy() if t.dtype == ember.bfloat16 else t.numpy()


def _close(a, b, rtol=1e-5, atol=1e-6):
    b = _values(b) if isinstance(b, ember.Tensor) else b
    np.testing.assert_allclose(_values(a), b, rtol=rtol, atol=atol)


# -- decompositions say what the kernels compute ---------------------------------------------------------------

x34, t3 = _x(3, 4), ember.tensor([1, 0, 3])
w4 = ember.from_numpy(RNG.uniform(0.5, 2, 4).astype(np.float32))
DECOMPOSED = [
    (aten._softmax.default, (_x(2, 3, 4), 1, False)),
    (aten._log_softmax.default, (_x(2, 3, 4), -1, False)),
    (aten._softmax.default, (_x(3, 4).to(ember.bfloat16), 0, False)),
    (aten.native_layer_norm.default, (_x(2, 3, 4), [3, 4], _x(3, 4), _x(3, 4), 1e-5)),
    (aten.rms_norm.default, (_x(2, 3, 4), [4], _x(4), None)),
    (aten.cosine_similarity.default, (_x(3, 4), _x(3, 4), 1, 1e-8)),
    (aten.mse_loss.default, (_x(3, 4), _x(3, 4), 1)),
    (aten.l1_loss.default, (_x(3, 4), _x(3, 4), 0)),
    (aten.cross_entropy_loss.default, (x34, t3, None, 1, -100, 0.0)),
    (aten.cross_entropy_loss.default, (x34, ember.tensor([1, -100, 3]), w4, 1, -100, 0.2)),
    (aten.cross_entropy_loss.default, (x34, ember.tensor([1, 2, 2]), None, 0, 2, 0.1)),
    (aten.cross_entropy_loss.default, (x34, _x(3, 4).softmax(1), w4, 2, -100, 0.3)),
]


@pytest.mark.parametrize("op, args", DECOMPOSED, ids=[f"{op}-{i}" for i, (op, _) in enumerate(DECOMPOSED)])
def test_decomposition_matches_kernel(op, args):
    ours, decomposed = op(*args), op.decompose(*args)
    for a, b in zip(
        ours if isinstance(ours, tuple) else [ours],
        decomposed if isinstance(decomposed, tuple) else [decomposed],
        strict=True,
    ):
        assert a.dtype == b.dtype and a.shape == b.shape
        _close(a, b, rtol=1e-2 if a.dtype == ember.bfloat16 else 1e-5)


def test_composite_front_ends_have_no_kernel():
    # layer_norm, group_norm, batch_norm, nll_loss(_nd) and softmax.int run by decomposition only.
    for op in (
        aten.layer_norm.default,
        aten.group_norm.default,
        aten.batch_norm.default,
        aten.nll_loss_nd.default,
        aten.softmax.int,
        aten.log_softmax.int,
    ):
        assert not op.has_kernel("cpu") and op.decomposition is not None
    x = _x(4, 6, 2)
    _close(aten.group_norm.default(x, 3), F.group_norm(x, 3))
    _close(aten.softmax.int(x, 1, ember.float64), ember.softmax(x.double(), 1))


# -- float64 references -----------------------------------------------------------------------------------------


def test_softmax_and_cross_entropy_against_float64():
    x = RNG.standard_normal((5, 7)) * 30
    t = RNG.integers(0, 7, 5)
    e = np.exp(x - x.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    _close(ember.softmax(ember.tensor(x, dtype=ember.float32), 1), ref, rtol=1e-5, atol=1e-7)
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    loss = np.mean(lse - x[np.arange(5), t])
    _close(F.cross_entropy(ember.tensor(x), ember.tensor(t)), loss, rtol=1e-12)


def test_layer_norm_against_float64():
    x = RNG.standard_normal((4, 9)) * 1e3 + 5e3
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    _close(F.layer_norm(ember.tensor(x, dtype=ember.float32), (9,)), ref, rtol=1e-4, atol=1e-4)


# -- the surface --------------------------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
def test_softmax_implicit_dim_warns_and_picks_like_pytorch(ndim):
    data = RNG.standard_normal((2,) * ndim).astype(np.float32)
    for name in ("softmax", "log_softmax"):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
            ours = getattr(F, name)(ember.from_numpy(data))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = getattr(torch.nn.functional, name)(torch.from_numpy(data))
        _close(ours, theirs.numpy())


@needs_torch
def test_torch_level_names():
    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in ((4, 6, 3), (6,), (6,)))
    ex, ew, eb = (ember.from_numpy(a.copy()) for a in (x, w, b))
    tx, tw, tb = (torch.from_numpy(a.copy()) for a in (x, w, b))
    pairs = [
        (ember.softmax(ex, 1, dtype=ember.float64), torch.softmax(tx, 1, dtype=torch.float64)),
        (ex.log_softmax(-1), tx.log_softmax(-1)),
        (ember.log_softmax(ex, 0), torch.log_softmax(tx, 0)),
        (ember.layer_norm(ex, [3]), torch.layer_norm(tx, [3])),
        (ember.rms_norm(ex, [6, 3]), torch.rms_norm(tx, [6, 3])),
        (ember.group_norm(ex, 2, ew, eb), torch.group_norm(tx, 2, tw, tb)),
        (
            ember.batch_norm(ex, ew, eb, None, None, True, 0.1, 1e-5, False),
            torch.batch_norm(tx, tw, tb, None, None, True, 0.1, 1e-5, False),
        ),
        (ember.cosine_similarity(ex, ex * 2 + 1, 2), torch.cosine_similarity(tx, tx * 2 + 1, 2)),
        (
            ember.embedding(ex[0], ember.tensor([[1, 2], [0, 5]])),
            torch.embedding(tx[0], torch.tensor([[1, 2], [0, 5]])),
        ),
    ]
    for ours, theirs in pairs:
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        _close(ours, theirs.numpy())


def test_in_place_effects_and_versions():
    # As in PyTorch: batch norm updates its running statistics without a new version (autograd
    # saves them, and a layer may run twice before a backward); embedding's max_norm renormalizes
    # the weight as an in-place op, which does make one.
    mean, var = ember.zeros(3), ember.ones(3)
    before = (mean._version, var._version)
    F.batch_norm(_x(5, 3), mean, var, training=True, momentum=0.5)
    assert (mean._version, var._version) == before
    assert (mean.numpy() != 0).any() and (var.numpy() != 1).any()
    weight = _x(4, 3) * 10
    version = weight._version
    F.embedding(ember.tensor([0, 0, 2]), weight, max_norm=1.0)
    assert weight._version > version
    norms = np.linalg.norm(weight.numpy(), axis=1)
    assert norms[0] <= 1.0 + 1e-6 and norms[2] <= 1.0 + 1e-6 and norms[1] > 1.0


def test_loss_warnings():
    x = _x(3, 1)
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(x, _x(3))
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(_x(3, 4), _x(3, 4).abs())
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        F.l1_loss(x, x, size_average=False)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.nll_loss(_x(3, 4), ember.tensor([0, 1, 2]), reduction="avg")


def test_meta_shapes_of_multi_output_ops():
    x = ember.empty(2, 3, 4, device="meta")
    out, mean, rstd = aten.native_layer_norm.default(x, [4], None, None, 1e-5)
    assert (out.shape, mean.shape, rstd.shape) == ((2, 3, 4), (2, 3, 1), (2, 3, 1))
    out, mean, rstd = aten.native_group_norm.default(x, None, None, 2, 3, 4, 3, 1e-5)
    assert (mean.shape, rstd.shape) == ((2, 3), (2, 3))
    out, total = aten.nll_loss_forward.default(
        ember.empty(5, 3, device="meta"), ember.empty(5, dtype=ember.int64, device="meta"), None, 0, -100
    )
    assert (out.shape, total.shape) == ((5,), ())


@needs_torch
def test_native_and_enum_forms_at_torch_level():
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    t = RNG.uniform(0, 1, (5, 4)).astype(np.float32)
    cases = [
        lambda L, a, b: L.binary_cross_entropy_with_logits(a, b),
        lambda L, a, b: L.binary_cross_entropy_with_logits(a, b, None, None, 2),
        lambda L, a, b: L.kl_div(a, b),
        lambda L, a, b: L.kl_div(a, b, 1, log_target=True),
        lambda L, a, b: L._softmax(a, 0, False),
        lambda L, a, b: L._log_softmax(a, 1, False),
        lambda L, a, b: L.native_layer_norm(a, [4], None, None, 1e-5),
        lambda L, a, b: L.native_group_norm(a, None, None, 5, 4, 1, 2, 1e-5),
        lambda L, a, b: L._native_batch_norm_legit(a, None, None, True, 0.1, 1e-5),
        lambda L, a, b: L._native_batch_norm_legit(a, None, None, L.zeros(4), L.ones(4), False, 0.1, 1e-5)[0],
        lambda L, a, b: L._native_batch_norm_legit_no_training(a, b[0], b[1], b[2], b[3] + 0.5, 0.1, 1e-5),
    ]
    for case in cases:
        ours = case(ember, ember.from_numpy(x.copy()), ember.from_numpy(t.copy()))
        theirs = case(torch, torch.from_numpy(x.copy()), torch.from_numpy(t.copy()))
        for a, b in zip(
            ours if isinstance(ours, tuple) else [ours], theirs if isinstance(theirs, tuple) else [theirs], strict=True
        ):
            assert tuple(a.shape) == tuple(b.shape)
            _close(a, b.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="half to float"):
        ember._softmax(ember.ones(3).half(), 0, True)


@needs_torch
def test_softmax_of_integers_with_a_float_dtype():
    data = np.arange(6).reshape(2, 3)
    ours = ember.softmax(ember.tensor(data), 1, dtype=ember.float32)
    theirs = torch.softmax(torch.tensor(data), 1, dtype=torch.float32)
    assert ours.dtype == ember.float32
    _close(ours, theirs.numpy())
    _close(
        F.log_softmax(ember.tensor(data), 0, dtype=ember.float64),
        torch.log_softmax(torch.tensor(data), 0, dtype=torch.float64).numpy(),
    )
