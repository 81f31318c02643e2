"""FlexAttention compiled by Ember (one generated kernel) against PyTorch's ``flex_attention`` on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
tfa = pytest.importorskip("torch.nn.attention.flex_attention")

import ember  # noqa: E402
from ember.nn.attention import flex_attention as efa  # noqa: E402

B, H, HKV, L, S, E = 2, 4, 2, 72, 80, 16
WINDOW = 19
TOL = {"float32": 3e-5, "float64": 1e-11}


def _variant(name: str, lib, dtype):
    """``(score_mod, mask_mod)`` of one attention variant, for ``lib`` (ember or torch), same values."""
    rng = np.random.default_rng(3)
    if name == "causal":
        return None, lambda b, h, q, kv: q >= kv
    if name == "sliding_window":
        return None, lambda b, h, q, kv: (q >= kv) & (q - kv <= WINDOW)
    if name == "document":
        doc = lib.tensor(np.sort(rng.integers(0, 3, size=S)), dtype=lib.int64)
        return None, lambda b, h, q, kv: doc[q] == doc[kv]
    if name == "alibi":
        slopes = lib.tensor(2.0 ** -np.arange(1, H + 1), dtype=dtype)
        return (lambda score, b, h, q, kv: score + slopes[h] * (kv - q)), lambda b, h, q, kv: q >= kv
    if name == "relative_bias":
        bias = lib.tensor(rng.standard_normal((H, L + S - 1)), dtype=dtype)
        return (lambda score, b, h, q, kv: score + bias[h, q - kv + S - 1]), None
    if name == "softcap":
        return (lambda score, b, h, q, kv: 3.0 * (score / 3.0).tanh()), lambda b, h, q, kv: q >= kv
    raise KeyError(name)


def _run(lib, fa, arrays, name, dtype_name, compiled):
    dtype = getattr(lib, dtype_name)
    q, k, v = (lib.tensor(a, dtype=dtype) for a in arrays)
    score_mod, mask_mod = _variant(name, lib, dtype)
    kwargs = {"device": "cpu"} if lib is torch else {}
    bm = None if mask_mod is None else fa.create_block_mask(mask_mod, None, None, L, S, BLOCK_SIZE=16, **kwargs)

    def f(q, k, v):
        return fa.flex_attention(q, k, v, score_mod=score_mod, block_mask=bm, enable_gqa=True, return_lse=True)

    return (ember.compile(f) if compiled else f)(q, k, v)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "name,dtype",
    [
        ("causal", "float32"),
        ("causal", "float64"),
        ("sliding_window", "float32"),
        ("document", "float32"),
        ("alibi", "float32"),
        ("alibi", "float64"),
        ("relative_bias", "float32"),
        ("softcap", "float32"),
    ],
)
def test_compiled_matches_pytorch(name, dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in ((B, H, L, E), (B, HKV, S, E), (B, HKV, S, E))]
    ember.compiler.reset()
    out, lse = _run(ember, efa, arrays, name, dtype, compiled=True)
    want_out, want_lse = _run(torch, tfa, arrays, name, dtype, compiled=False)
    tol = TOL[dtype]
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(lse.numpy(), want_lse.numpy(), rtol=tol, atol=tol)
