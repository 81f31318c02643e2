"""MultiheadAttention and the Transformer layers against PyTorch, masks included."""

from __future__ import annotations

import numpy as np
import pytest
from layer_oracle import compare, copy_weights, tensors, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the test oracle) is not installed")


def _pair(name: str, *args, **options):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args, **options).double().eval()
    ours = getattr(ember.nn, name)(*args, **options).double().eval()
    copy_weights(theirs, ours)
    return ours, theirs


def _masks(lib, kind: str, length: int, batch: int):
    causal = np.triu(np.ones((length, length), dtype=bool), 1)
    padding = np.zeros((batch, length), dtype=bool)
    padding[0, -2:] = True
    if kind == "bool":
        return lib.tensor(causal), lib.tensor(padding)
    return lib.tensor(np.where(causal, -np.inf, 0.0)), lib.tensor(np.where(padding, -np.inf, 0.0))


@needs_torch
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("mask", [None, "bool", "float"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention(need_weights, mask, batch_first):
    ours, theirs = _pair("MultiheadAttention", 8, 2, batch_first=batch_first)

    def call(module, q, k, v):
        lib = ember if module is ours else torch
        kwargs = {"need_weights": need_weights}
        if mask is not None:
            kwargs["attn_mask"], kwargs["key_padding_mask"] = _masks(lib, mask, 5, 3)
        return module(q, k, v, **kwargs)

    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, shape, shape, shape), call=call)


@needs_torch
def test_multihead_attention_with_other_key_sizes_bias_kv_zero_attn_and_per_head_weights():
    ours, theirs = _pair("MultiheadAttention", 8, 4, kdim=6, vdim=5, add_bias_kv=True, add_zero_attn=True)
    call = lambda m, q, k, v: m(q, k, v, average_attn_weights=False)  # noqa: E731
    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (4, 2, 8), (6, 2, 6), (6, 2, 5)), call=call)
    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (4, 8), (6, 6), (6, 5)), call=call)


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_and_decoder_layers(norm_first, activation):
    options = dict(dim_feedforward=16, dropout=0.0, activation=activation, norm_first=norm_first, batch_first=True)
    ours, theirs = _pair("TransformerEncoderLayer", 8, 2, **options)

    def encode(module, src):
        lib = ember if module is ours else torch
        mask, padding = _masks(lib, "bool", 5, 2)
        return module(src, src_mask=mask, src_key_padding_mask=padding)

    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (2, 5, 8)), call=encode)
    ours, theirs = _pair("TransformerDecoderLayer", 8, 2, **options)

    def decode(module, tgt, memory):
        lib = ember if module is ours else torch
        mask, _ = _masks(lib, "float", 5, 2)
        return module(tgt, memory, tgt_mask=mask)

    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (2, 5, 8), (2, 4, 8)), call=decode)


@needs_torch
@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_the_whole_transformer_prints_initializes_and_computes_as_pytorch():
    ours, theirs = _pair(
        "Transformer", d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0
    )
    assert repr(ours) == repr(theirs)

    def call(module, src, tgt):
        lib = ember if module is ours else torch
        mask = module.generate_square_subsequent_mask(3)
        assert mask.dtype == lib.float32
        return module(src, tgt, tgt_mask=mask.double())

    compare(ours, theirs, lambda rng, lib: tensors(rng, lib, (4, 2, 8), (3, 2, 8)), call=call)


def test_mask_errors_as_pytorch():
    mha = ember.nn.MultiheadAttention(4, 2)
    q = ember.randn(3, 1, 4)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(q, q, q, is_causal=True)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is \\(2, 2\\), but should be \\(3, 3\\)"):
        mha(q, q, q, attn_mask=ember.zeros(2, 2))
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        ember.nn.MultiheadAttention(5, 2)
