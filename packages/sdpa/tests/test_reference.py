"""The float64 reference against PyTorch's scaled_dot_product_attention (math backend, float64)."""

import numpy as np
import pytest

from ember.sdpa import reference

torch = pytest.importorskip("torch", reason="PyTorch is the oracle; it is installed in the 3.11 test session")


def _torch_attention(q, k, v, mask, is_causal, scale):
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tmask = None if mask is None else torch.tensor(mask)
    out = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=tmask, is_causal=is_causal, scale=scale, enable_gqa=True
    )
    return out, (tq, tk, tv)


CASES = [
    dict(b=2, hq=4, hkv=4, sq=7, skv=7, d=8, mask=None, causal=False, scale=None),
    dict(b=1, hq=4, hkv=2, sq=5, skv=9, d=16, mask=None, causal=True, scale=0.3),
    dict(b=2, hq=2, hkv=1, sq=6, skv=6, d=4, mask="bool", causal=False, scale=None),
    dict(b=2, hq=2, hkv=2, sq=3, skv=10, d=8, mask="float", causal=False, scale=None),
]


@pytest.mark.parametrize("case", CASES)
def test_forward_and_gradients_match_pytorch(case):
    rng = np.random.default_rng()
    q = rng.standard_normal((case["b"], case["hq"], case["sq"], case["d"]))
    k = rng.standard_normal((case["b"], case["hkv"], case["skv"], case["d"]))
    v = rng.standard_normal((case["b"], case["hkv"], case["skv"], case["d"]))
    mask = None
    if case["mask"] == "bool":
        mask = rng.random((1, 1, case["sq"], case["skv"])) < 0.7
        mask[..., 0] = True  # PyTorch gives NaN for fully masked rows; the reference gives zeros
    elif case["mask"] == "float":
        mask = rng.standard_normal((case["b"], 1, case["sq"], case["skv"]))
    kwargs = dict(mask=mask, is_causal=case["causal"], scale=case["scale"])
    out, lse, _ = reference.forward(q, k, v, **kwargs)
    t_out, leaves = _torch_attention(q, k, v, mask, case["causal"], case["scale"])
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    grad_out = rng.standard_normal(out.shape)
    t_out.backward(torch.tensor(grad_out))
    for ours, leaf in zip(reference.backward(grad_out, q, k, v, **kwargs), leaves, strict=True):
        np.testing.assert_allclose(ours, leaf.grad.numpy(), rtol=1e-9, atol=1e-11)
    assert lse.shape == q.shape[:3]


def test_fully_masked_rows_give_zeros_and_infinite_lse():
    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal((1, 1, 3, 4)) for _ in range(3))
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    out, lse, _ = reference.forward(q, k, v, mask=mask)
    assert np.all(out[0, 0, 1] == 0.0) and np.isposinf(lse[0, 0, 1])
    gq, gk, gv = reference.backward(rng.standard_normal(out.shape), q, k, v, mask=mask)
    assert np.all(gq[0, 0, 1] == 0.0)
    assert np.all(np.isfinite(gk)) and np.all(np.isfinite(gv))


def test_dropout_rescales_kept_probabilities():
    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal((2, 2, 16, 8)) for _ in range(3))
    _, _, plain = reference.forward(q, k, v)
    _, _, dropped = reference.forward(q, k, v, dropout_p=0.25, seed=7, offset=3)
    keep = reference.dropout_keep(plain.shape, 0.25, 7, 3)
    np.testing.assert_allclose(dropped, np.where(keep, plain / 0.75, 0.0))
    assert 0.65 < keep.mean() < 0.85
