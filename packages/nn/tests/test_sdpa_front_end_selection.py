"""The front end without PyTorch: backend choice and its reasons, flags, dropout, the float64 reference."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.attention import SDPBackend, explain, sdpa_kernel
from ember.sdpa import reference

FLASH, EFFICIENT, MATH, CUDNN = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
    SDPBackend.CUDNN_ATTENTION,
)


def _qkv(shape=(2, 4, 8, 16), kv_heads=None, dtype=np.float64, grad=False, seed=0):
    rng = np.random.default_rng(seed)
    kv = (shape[0], kv_heads or shape[1], *shape[2:])
    arrays = [rng.standard_normal(s).astype(dtype) for s in (shape, kv, kv)]
    tensors = [ember.tensor(a) for a in arrays]
    if grad:
        tensors = [t.requires_grad_() for t in tensors]
    return arrays, tensors


# -- the choice and its reasons ---------------------------------------------------------------------


def test_the_choice_follows_the_rules():
    _, (q, k, v) = _qkv(dtype=np.float32)
    assert explain(q, k, v) == (FLASH, {})
    assert explain(q, k, v, attn_mask=ember.ones(8, 8, dtype=ember.bool))[0] is FLASH
    backend, rejected = explain(q, k, v, dropout_p=0.1)
    assert backend is EFFICIENT and list(rejected) == [FLASH]
    assert any("dropout_p is 0.1" in r for r in rejected[FLASH])
    backend, rejected = explain(q, k, v, attn_mask=ember.ones(4, 8, 8, dtype=ember.bool))
    assert backend is EFFICIENT and any("3 dims" in r for r in rejected[FLASH])
    mask = ember.zeros(8, 8).requires_grad_()
    backend, rejected = explain(q, k, v, attn_mask=mask)
    assert backend is MATH and all(any("requires grad" in r for r in rejected[b]) for b in (FLASH, EFFICIENT))
    assert explain(q[0], k[0], v[0])[0] is MATH  # 3-dim inputs
    assert explain(q, k[:, :2], v[:, :2])[0] is MATH  # fewer key heads without enable_gqa
    assert explain(q, k[:, :2], v[:, :2], enable_gqa=True)[0] is FLASH
    assert explain(q.transpose(-1, -2).contiguous().transpose(-1, -2), k, v)[0] is EFFICIENT  # last-dim stride
    assert explain(q, k[:, :, :0], v[:, :, :0])[0] is MATH


def test_invalid_arguments_are_every_backends_reason_and_the_calls_error():
    _, (q, k, v) = _qkv(dtype=np.float32)
    mask = ember.zeros(8, 8, dtype=ember.int64)
    backend, rejected = explain(q, k, v, attn_mask=mask)
    assert backend is SDPBackend.ERROR
    assert set(rejected) == {FLASH, EFFICIENT, MATH, CUDNN}
    assert all("attn_mask.dtype: long int" in r[0] for r in rejected.values())
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    # As PyTorch's: the flash kernel applies both a mask and is_causal; the math path refuses the pair.
    both = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.zeros(8, 8), is_causal=True)
    np.testing.assert_allclose(both.numpy(), F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy())
    with sdpa_kernel(MATH), pytest.raises(RuntimeError, match="should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=ember.zeros(8, 8), is_causal=True)


def test_when_no_allowed_backend_can_run_the_error_lists_every_reason():
    _, (q, k, v) = _qkv(dtype=np.float32)
    with sdpa_kernel([FLASH, CUDNN]), pytest.raises(RuntimeError) as error:
        F.scaled_dot_product_attention(q, k, v.to(ember.float32)[..., :8], dropout_p=0.2)
    text = str(error.value)
    assert "FLASH_ATTENTION: dropout_p is 0.2" in text
    assert "FLASH_ATTENTION: head dims differ" in text
    assert "EFFICIENT_ATTENTION: disabled" in text and "MATH: disabled" in text
    assert "CUDNN_ATTENTION: cuDNN attention is not available in Ember" in text


def test_sdpa_kernel_restores_the_flags_and_orders_when_asked():
    import ember.backends.cuda as cuda

    _, (q, k, v) = _qkv(dtype=np.float32)
    with sdpa_kernel([MATH, FLASH], set_priority=True):
        assert explain(q, k, v)[0] is MATH
        assert not cuda.mem_efficient_sdp_enabled() and cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with sdpa_kernel([MATH, FLASH]):
        assert explain(q, k, v)[0] is FLASH
    assert explain(q, k, v)[0] is FLASH and cuda.mem_efficient_sdp_enabled()

    @sdpa_kernel(MATH)
    def chosen():
        return explain(q, k, v)[0]

    assert chosen() is MATH and cuda.flash_sdp_enabled()
    cuda.enable_flash_sdp(False)
    try:
        assert not cuda.flash_sdp_enabled()
        assert explain(q, k, v)[0] is EFFICIENT
    finally:
        cuda.enable_flash_sdp(True)
    with pytest.warns(FutureWarning), cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
        assert explain(q, k, v)[0] is MATH
    assert cuda.cudnn_sdp_enabled() and explain(q, k, v)[0] is FLASH
    with pytest.raises(AssertionError, match="SDPBackend"), sdpa_kernel("flash"):
        pass


def test_the_choice_is_logged_once_per_signature(capsys):
    _, (q, k, v) = _qkv(shape=(1, 2, 5, 8), dtype=np.float32)
    try:
        ember.logs.set_logs(sdpa=logging.INFO)
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, dropout_p=0.25)
    finally:
        ember.logs.set_logs()
    err = capsys.readouterr().err
    assert err.count("runs EFFICIENT_ATTENTION") == 1
    assert "FLASH_ATTENTION: dropout_p is 0.25" in err
    F.scaled_dot_product_attention(q, k, v)
    assert "runs" not in capsys.readouterr().err


# -- the kernels against the float64 reference ---------------------------------------------------


@pytest.mark.parametrize("backend", [FLASH, EFFICIENT])
@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_float64_values_and_gradients_match_the_reference_to_1e_12(backend, mask):
    (aq, ak, av), (q, k, v) = _qkv(shape=(2, 4, 19, 16), kv_heads=2, grad=True)
    rng = np.random.default_rng(5)
    amask = None
    if mask == "bool":
        amask = rng.random((19, 19)) > 0.4
        amask[3] = False  # a fully masked row
    elif mask == "float":
        amask = rng.standard_normal((2, 4, 19, 19))
    g = rng.standard_normal(aq.shape)
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None if amask is None else ember.tensor(amask), scale=0.2, enable_gqa=True
        )
        out.backward(ember.tensor(g))
    want = reference.forward(aq, ak, av, mask=amask, scale=0.2)[0]
    grads = reference.backward(g, aq, ak, av, mask=amask, scale=0.2)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    for t, w in zip((q, k, v), grads, strict=True):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-12, atol=1e-12)


# -- dropout --------------------------------------------------------------------------------------


def test_dropout_draws_the_generators_philox_stream_with_the_same_mask_in_backward():
    (aq, ak, av), (q, k, v) = _qkv(shape=(2, 2, 9, 8), grad=True)
    g = np.random.default_rng(7).standard_normal(aq.shape)
    ember.manual_seed(123)
    seed, offset = ember.default_generator.initial_seed(), ember.default_generator.get_offset()
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)
    out.backward(ember.tensor(g))
    assert ember.default_generator.get_offset() == offset + 2 * 2 * 9 * 9
    options = {"is_causal": True, "dropout_p": 0.3, "seed": seed, "offset": offset}
    np.testing.assert_allclose(out.detach().numpy(), reference.forward(aq, ak, av, **options)[0], atol=1e-12)
    for t, w in zip((q, k, v), reference.backward(g, aq, ak, av, **options), strict=True):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", [EFFICIENT, MATH])
def test_dropout_keeps_one_minus_p_and_repeats_with_the_seed(backend):
    # q = k = 0 makes P uniform (1/S); v = I makes the output the dropped-out P itself.
    s, p = 64, 0.3
    q = ember.zeros(4, 4, s, s)
    v = ember.eye(s).expand(4, 4, s, s).contiguous()
    with sdpa_kernel(backend):
        ember.manual_seed(0)
        first = F.scaled_dot_product_attention(q, q, v, dropout_p=p).numpy()
        ember.manual_seed(0)
        again = F.scaled_dot_product_attention(q, q, v, dropout_p=p).numpy()
        other = F.scaled_dot_product_attention(q, q, v, dropout_p=p).numpy()
    kept = first > 0
    assert abs(kept.mean() - (1 - p)) < 0.01  # 65536 draws: 0.01 is over 5 standard deviations
    np.testing.assert_allclose(first[kept], 1 / ((1 - p) * s), rtol=1e-6)
    np.testing.assert_array_equal(first, again)
    assert (first != other).any()


def test_dropout_gradients_are_those_of_the_masked_function():
    # With the mask fixed, out is linear in v: d(sum(out * g))/dv = P_dropᵀ g, where P_drop is read off
    # a second call with the same seed and v = I.
    _, (q, k, v) = _qkv(shape=(1, 2, 8, 8), grad=True)
    g = ember.tensor(np.random.default_rng(2).standard_normal((1, 2, 8, 8)))
    ember.manual_seed(9)
    F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).backward(g)
    ember.manual_seed(9)
    eye = ember.eye(8, dtype=ember.float64).expand(1, 2, 8, 8)
    p_drop = F.scaled_dot_product_attention(q.detach(), k.detach(), eye, dropout_p=0.5)
    np.testing.assert_allclose(v.grad.numpy(), (p_drop.transpose(-1, -2) @ g).numpy(), rtol=1e-12, atol=1e-12)


# -- modules and tracing --------------------------------------------------------------------------


def test_modules_reach_the_kernels(monkeypatch):
    from ember.sdpa import backends

    chosen = []
    select = backends.select

    def recording(*args, **kwargs):
        chosen.append(select(*args, **kwargs))
        return chosen[-1]

    monkeypatch.setattr(backends, "select", recording)
    mha = ember.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = ember.randn(2, 5, 16)
    mha(x, x, x, need_weights=False)
    assert chosen == [FLASH]
    layer = ember.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
    layer(x).sum().backward()  # training: dropout 0.1
    assert chosen[-1] is EFFICIENT


def test_fake_tracing_records_the_kernel_op():
    proxy_tensor = pytest.importorskip("ember.fx.experimental.proxy_tensor")
    _, (q, k, v) = _qkv(dtype=np.float32)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    gm = proxy_tensor.make_fx(f, tracing_mode="fake")(q, k, v)
    assert "_scaled_dot_product_flash_attention_for_cpu" in gm.code
    np.testing.assert_allclose(gm(q, k, v).numpy(), f(q, k, v).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", [FLASH, EFFICIENT, MATH])
def test_vmap_batches_each_backend_and_refuses_dropout_in_error_mode(backend):
    q = ember.tensor(np.random.default_rng(0).standard_normal((3, 2, 4, 8, 16)))
    keep = ember.ones(8, 8, dtype=ember.bool).tril()

    def f(q):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=keep)

    with sdpa_kernel(backend):
        batched = ember.func.vmap(f)(q)
        looped = ember.stack([f(q[i]) for i in range(3)])
        np.testing.assert_allclose(batched.numpy(), looped.numpy(), rtol=1e-12, atol=1e-12)
        if backend is not FLASH:
            with pytest.raises(RuntimeError, match="randomness error mode"):
                ember.func.vmap(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5))(q)
