"""FlexAttention forward and BlockMask contents against PyTorch's ``torch.nn.attention.flex_attention``."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
tfa = pytest.importorskip("torch.nn.attention.flex_attention")

from _flex_variants import VARIANTS, H, make  # noqa: E402

import ember  # noqa: E402
from ember.nn.attention import flex_attention as efa  # noqa: E402

B, D = 2, 16
DTYPES = {"float32": (np.float32, 2e-5), "float64": (np.float64, 1e-12)}


def _inputs(q_len, kv_len, dtype, hkv=H, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((B, h, n, D)).astype(dtype) for h, n in ((H, q_len), (hkv, kv_len), (hkv, kv_len))]
    return arrays


def _run_both(variant, q_len, kv_len, dtype, block, hkv=H, return_lse=False):
    arrays = _inputs(q_len, kv_len, dtype, hkv)
    results = []
    for lib, mod in ((ember, efa), (torch, tfa)):
        tdt = lib.float64 if dtype == np.float64 else lib.float32
        score_mod, mask_mod, _ = make(variant, lib, q_len, kv_len, tdt)
        bm = None
        if mask_mod is not None:
            bm = mod.create_block_mask(mask_mod, None, None, q_len, kv_len, device="cpu", BLOCK_SIZE=block)
        q, k, v = (lib.tensor(a) for a in arrays)
        results.append(
            mod.flex_attention(q, k, v, score_mod=score_mod, block_mask=bm, enable_gqa=hkv != H, return_lse=return_lse)
        )
    return results


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_matches_pytorch(variant, dtype):
    np_dtype, tol = DTYPES[dtype]
    (ours, our_lse), (theirs, their_lse) = _run_both(variant, 200, 200, np_dtype, 64, return_lse=True)
    assert ours.dtype == ember.float64 if np_dtype == np.float64 else ember.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(our_lse.numpy(), their_lse.numpy(), rtol=tol, atol=tol)
    assert str(our_lse.dtype).split(".")[-1] == str(their_lse.dtype).split(".")[-1]


@pytest.mark.parametrize("variant", ["causal", "alibi", "document"])
def test_forward_default_block_size_unequal_lengths(variant):
    ours, theirs = _run_both(variant, 150, 300, np.float64, 128)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", ["causal", "softcap", None])
def test_gqa(variant):
    if variant is None:
        arrays = _inputs(96, 96, np.float64, hkv=2)
        ours = efa.flex_attention(*(ember.tensor(a) for a in arrays), enable_gqa=True)
        theirs = tfa.flex_attention(*(torch.tensor(a) for a in arrays), enable_gqa=True)
    else:
        ours, theirs = _run_both(variant, 96, 96, np.float64, 32, hkv=2)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_fully_masked_rows_give_zeros_and_minus_inf_lse():
    arrays = _inputs(64, 64, np.float64)
    got = []
    for lib, mod in ((ember, efa), (torch, tfa)):
        bm = mod.create_block_mask(lambda b, h, q, kv: (q >= 10) & (kv <= q), 1, 1, 64, 64, device="cpu", BLOCK_SIZE=16)
        got.append(mod.flex_attention(*(lib.tensor(a) for a in arrays), block_mask=bm, return_lse=True))
    (o, lse), (to, tlse) = got
    np.testing.assert_allclose(o.numpy(), to.numpy(), atol=1e-12)
    np.testing.assert_array_equal(lse.numpy()[..., :10], tlse.numpy()[..., :10])
    assert np.isneginf(lse.numpy()[..., :10]).all()


def test_no_mask_with_scale():
    arrays = _inputs(70, 90, np.float64)
    ours = efa.flex_attention(*(ember.tensor(a) for a in arrays), scale=0.3)
    theirs = tfa.flex_attention(*(torch.tensor(a) for a in arrays), scale=0.3)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def _masks(lib):
    doc = lib.tensor([0] * 100 + [1] * 60 + [2] * 140)
    return {
        "causal": (lambda b, h, q, kv: q >= kv, None, None),
        "window_per_head": (lambda b, h, q, kv: (q >= kv) & (q - kv <= 20 * (h + 1)), 2, 3),
        "document_per_batch": (lambda b, h, q, kv: (doc[q] == doc[kv]) | (b == 1), 2, None),
        "or_and": (
            tfa_like(lib).or_masks(
                lambda b, h, q, kv: kv < 40,
                tfa_like(lib).and_masks(lambda b, h, q, kv: q >= kv, lambda b, h, q, kv: q - kv < 64),
            ),
            1,
            1,
        ),
    }


def tfa_like(lib):
    return efa if lib is ember else tfa


@pytest.mark.parametrize("name", ["causal", "window_per_head", "document_per_batch", "or_and"])
@pytest.mark.parametrize("block", [128, (64, 32)])
def test_block_mask_contents(name, block):
    got = []
    for lib in (ember, torch):
        mask_mod, b, h = _masks(lib)[name]
        got.append(tfa_like(lib).create_block_mask(mask_mod, b, h, 300, 300, device="cpu", BLOCK_SIZE=block))
    ours, theirs = got
    for field in (
        "kv_num_blocks",
        "kv_indices",
        "full_kv_num_blocks",
        "full_kv_indices",
        "q_num_blocks",
        "q_indices",
        "full_q_num_blocks",
        "full_q_indices",
    ):
        np.testing.assert_array_equal(getattr(ours, field).numpy(), getattr(theirs, field).numpy(), err_msg=field)
        assert str(getattr(ours, field).dtype).split(".")[-1] == str(getattr(theirs, field).dtype).split(".")[-1]
    assert ours.BLOCK_SIZE == theirs.BLOCK_SIZE and ours.shape == tuple(theirs.shape)
    assert ours.sparsity() == pytest.approx(theirs.sparsity())
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())
    assert repr(ours) == repr(theirs).replace("torch.Size(", "ember.Size(") or _repr_equal(ours, theirs)
    assert ours.to_string() == theirs.to_string()
    assert str(ours) == str(theirs)
    rebuilt = efa.BlockMask.from_kv_blocks(
        *(ember.tensor(getattr(theirs, f).numpy()) for f in ("kv_num_blocks", "kv_indices")),
        *(ember.tensor(getattr(theirs, f).numpy()) for f in ("full_kv_num_blocks", "full_kv_indices")),
        BLOCK_SIZE=theirs.BLOCK_SIZE,
        seq_lengths=theirs.seq_lengths,
    )
    for field in ("q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        np.testing.assert_array_equal(getattr(rebuilt, field).numpy(), getattr(theirs, field).numpy(), err_msg=field)
    sub, tsub = ours[0], theirs[0]
    np.testing.assert_array_equal(sub.kv_indices.numpy(), tsub.kv_indices.numpy())
    np.testing.assert_array_equal(sub.q_indices.numpy(), tsub.q_indices.numpy())


def _repr_equal(ours, theirs):
    def norm(s):
        return s.replace("torch.Size(", "").replace("ember.Size(", "").replace("])", "]")

    return norm(repr(ours)) == norm(repr(theirs))


def test_create_mask():
    mm = _masks
    for name in ("window_per_head", "document_per_batch"):
        ours = efa.create_mask(mm(ember)[name][0], 2, 3, 300, 300, device="cpu")
        theirs = tfa.create_mask(mm(torch)[name][0], 2, 3, 300, 300, device="cpu")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_noop_mask_and_errors():
    q = ember.randn(1, 2, 8, 4)
    k = ember.randn(1, 1, 8, 4)
    with pytest.raises(ValueError, match="enable_gqa=True"):
        efa.flex_attention(q, k, k)
    bm = efa.create_block_mask(efa.noop_mask, 1, 1, 16, 16, device="cpu")
    with pytest.raises(ValueError, match="block_mask was created for"):
        efa.flex_attention(q, q, q, block_mask=bm)
    with pytest.raises(RuntimeError, match="callable"):
        efa.and_masks(1)


@pytest.mark.parametrize("name", ["window_per_head", "document_per_batch", "or_and"])
def test_forward_with_per_batch_and_per_head_block_masks(name):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((2, 3, 300, D)) for _ in range(3)]
    got = []
    for lib in (ember, torch):
        mask_mod, b, h = _masks(lib)[name]
        bm = tfa_like(lib).create_block_mask(mask_mod, b, h, 300, 300, device="cpu", BLOCK_SIZE=(64, 32))
        got.append(tfa_like(lib).flex_attention(*(lib.tensor(a) for a in arrays), block_mask=bm))
    np.testing.assert_allclose(got[0].numpy(), got[1].numpy(), rtol=1e-12, atol=1e-12)
