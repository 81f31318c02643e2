"""``F.scaled_dot_product_attention`` on each backend against PyTorch's, with the backend forced in both."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

TF = torch.nn.functional
TB = torch.nn.attention.SDPBackend
TOL = {"float64": 1e-10, "float32": 2e-5, "bfloat16": 3e-2, "float16": 4e-3}


def _tensors(shapes, dtype, seed=0, grad=True):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float64 if dtype == "float64" else np.float32) for s in shapes]
    ours = [ember.tensor(a).to(getattr(ember, dtype)) for a in arrays]
    theirs = [torch.tensor(a).to(getattr(torch, dtype)) for a in arrays]
    if grad:
        ours = [t.requires_grad_() for t in ours]
        theirs = [t.requires_grad_() for t in theirs]
    return ours, theirs


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().to(torch.float64).numpy()
    return t.detach().to(ember.float64).numpy()


def _masks(kind, sq, skv, dtype):
    rng = np.random.default_rng(1)
    if kind == "bool2d":
        keep = rng.random((sq, skv)) > 0.3
        keep[:, 0] = True
        return ember.tensor(keep), torch.tensor(keep)
    if kind == "float4d":
        bias = rng.standard_normal((2, 1, sq, skv)).astype(np.float32)
        return ember.tensor(bias).to(getattr(ember, dtype)), torch.tensor(bias).to(getattr(torch, dtype))
    return None, None


CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "scale": {"scale": 0.3},
    "bool2d": {"mask": "bool2d"},
    "float4d": {"mask": "float4d"},
    "gqa": {"enable_gqa": True, "hkv": 2},
    "gqa_causal": {"enable_gqa": True, "hkv": 1, "is_causal": True},
}


def _run(case, dtype, ours_backend, their_backend, sq=37, skv=37):
    case = dict(CASES[case])
    hkv = case.pop("hkv", 4)
    mask_kind = case.pop("mask", None)
    (q, k, v, g), (tq, tk, tv, tg) = _tensors(
        [(2, 4, sq, 16), (2, hkv, skv, 16), (2, hkv, skv, 16), (2, 4, sq, 16)], dtype
    )
    mask, tmask = _masks(mask_kind, sq, skv, dtype)
    with sdpa_kernel(ours_backend):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **case)
        out.backward(g.detach())
    with torch.nn.attention.sdpa_kernel(their_backend):
        tout = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask, **case)
        tout.backward(tg.detach())
    tol = TOL[dtype]
    for a, b in ((out, tout), (q.grad, tq.grad), (k.grad, tk.grad), (v.grad, tv.grad)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("backend", ["FLASH_ATTENTION", "MATH"])
def test_values_and_gradients_with_the_backend_forced_in_both(backend, case, dtype):
    _run(case, dtype, getattr(SDPBackend, backend), getattr(TB, backend))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("case", ["plain", "bool2d", "float4d", "gqa", "causal"])
def test_efficient_attention_against_pytorchs_default_choice(case, dtype):
    _run(case, dtype, SDPBackend.EFFICIENT_ATTENTION, [TB.FLASH_ATTENTION, TB.MATH])


def test_other_lengths_and_a_three_dim_broadcast_mask():
    (q, k, v), (tq, tk, tv) = _tensors([(1, 2, 5, 8), (1, 2, 9, 8), (1, 2, 9, 8)], "float64")
    keep = np.random.default_rng(3).random((2, 5, 9)) > 0.5
    keep[..., 0] = True
    assert ember.nn.attention.explain(q, k, v, attn_mask=ember.tensor(keep))[0] is SDPBackend.EFFICIENT_ATTENTION
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(keep))
    tout = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(keep))
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-12, atol=1e-12)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(_np(k.grad), _np(tk.grad), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"])
def test_fully_masked_rows_give_zeros_as_pytorchs_math_path(backend):
    (q, k, v), (tq, tk, tv) = _tensors([(1, 2, 6, 8)] * 3, "float32")
    keep = np.ones((6, 6), dtype=bool)
    keep[2] = False
    with sdpa_kernel(getattr(SDPBackend, backend)):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(keep))
        out.sum().backward()
    with torch.nn.attention.sdpa_kernel(TB.MATH):
        tout = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(keep))
        tout.sum().backward()
    assert not np.isnan(_np(out)).any() and (_np(out)[:, :, 2] == 0).all()
    for a, b in ((out, tout), (q.grad, tq.grad), (k.grad, tk.grad), (v.grad, tv.grad)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=2e-5, atol=2e-5)


def test_dropout_is_refused_by_both_flash_backends_and_taken_by_both_math_paths():
    (q, k, v), (tq, tk, tv) = _tensors([(1, 2, 6, 8)] * 3, "float32", grad=False)
    with torch.nn.attention.sdpa_kernel(TB.FLASH_ATTENTION), pytest.raises(RuntimeError):
        TF.scaled_dot_product_attention(tq, tk, tv, dropout_p=0.5)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION), pytest.raises(RuntimeError, match=r"dropout_p is 0\.5"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    with sdpa_kernel(SDPBackend.MATH):
        assert F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).shape == (1, 2, 6, 8)


def test_argument_errors_match_pytorchs():
    (q, k, v), (tq, tk, tv) = _tensors([(1, 2, 4, 8)] * 3, "float32", grad=False)
    with pytest.raises(RuntimeError) as theirs:
        TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.zeros(4, 4, dtype=torch.int64))
    with pytest.raises(RuntimeError) as ours:
        F.scaled_dot_product_attention(q, k, v, attn_mask=ember.zeros(4, 4, dtype=ember.int64))
    assert "Expected attn_mask dtype to be bool or float or to match query dtype" in str(theirs.value)
    assert "Expected attn_mask dtype to be bool or float or to match query dtype" in str(ours.value)
    with pytest.raises(RuntimeError, match="same dtype"):
        TF.scaled_dot_product_attention(tq, tk.double(), tv)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k.to(ember.float64), v)


@pytest.mark.parametrize("backend", ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"])
def test_a_float32_mask_beside_bfloat16_inputs(backend):
    (q, k, v), (tq, tk, tv) = _tensors([(1, 2, 12, 8)] * 3, "bfloat16", grad=False)
    bias = np.random.default_rng(4).standard_normal((12, 12)).astype(np.float32)
    with sdpa_kernel(getattr(SDPBackend, backend)):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(bias))
    tout = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(bias))
    assert out.dtype is ember.bfloat16
    np.testing.assert_allclose(_np(out), _np(tout), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("backend", ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"])
def test_double_backward_through_the_kernels(backend):
    (q, k, v), (tq, tk, tv) = _tensors([(1, 2, 6, 4)] * 3, "float64")
    keep = np.ones((6, 6), dtype=bool)
    keep[1, 2:] = False
    with sdpa_kernel(getattr(SDPBackend, backend)):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(keep))
        (gq,) = ember.autograd.grad((out**2).sum(), q, create_graph=True)
        gq.sum().backward()
    # PyTorch's flash CPU op has no double backward; its math path is the oracle.
    with torch.nn.attention.sdpa_kernel(TB.MATH):
        tout = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(keep))
        (tgq,) = torch.autograd.grad((tout**2).sum(), tq, create_graph=True)
        tgq.sum().backward()
    np.testing.assert_allclose(_np(gq), _np(tgq), rtol=1e-10, atol=1e-12)
    for a, b in ((k.grad, tk.grad), (v.grad, tv.grad)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mask", ["none", "bool", "additive"])
@pytest.mark.parametrize("is_causal", [False, True])
def test_efficient_ops_decompositions_agree_with_the_kernels(mask, is_causal):
    """The efficient-attention op pair without dropout: its decomposition (what backends without the
    kernel and graph lowering use) against its kernel, in float64."""
    from ember.ops import aten

    rng = np.random.default_rng(3)
    q, k, v = (ember.tensor(rng.standard_normal((2, 3, 5, 8))) for _ in range(3))
    bias = None
    if mask == "bool" and not is_causal:
        bias = ember.tensor(rng.random((5, 5)) > 0.3)
    elif mask == "additive" and not is_causal:
        bias = ember.tensor(rng.standard_normal((1, 3, 5, 5)))
    op, backward = (
        aten._scaled_dot_product_efficient_attention.default,
        aten._scaled_dot_product_efficient_attention_backward.default,
    )
    out, lse, seed, offset = op(q, k, v, bias, True, 0.0, is_causal)
    ref_out, ref_lse, _, _ = op.decompose(q, k, v, bias, True, 0.0, is_causal)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref_out), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(lse), np.asarray(ref_lse), rtol=1e-12, atol=1e-12)
    g = ember.tensor(rng.standard_normal((2, 3, 5, 8)))
    args = (g, q, k, v, bias, out, lse, seed, offset, 0.0, [True, True, True, False], is_causal)
    for ours, ref in zip(backward(*args)[:3], backward.decompose(*args)[:3], strict=True):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-10, atol=1e-12)
