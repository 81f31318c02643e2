"""The attention ops (``ember.sdpa.ops``) against PyTorch's, and against the float64 reference."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.core import DispatchMode
from ember.sdpa import reference

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")

aten = ember.ops.aten
forward_op = aten._scaled_dot_product_flash_attention_for_cpu.default
backward_op = aten._scaled_dot_product_flash_attention_for_cpu_backward.default
cuda_op = aten._scaled_dot_product_flash_attention.default

DTYPES = ["float32", "float64", "bfloat16", "float16"]
# Largest absolute error allowed, per dtype, for values of order 1.
TOL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 3e-2, "float16": 4e-3}
# (B, Hq, Hkv, Sq, Skv, D): lengths that are not multiples of the 64-row tiles, one-element rows,
# grouped-query heads and a head dim past one vector.
SHAPES = [
    (2, 3, 3, 70, 90, 16),
    (1, 2, 2, 1, 1, 8),
    (1, 4, 2, 65, 129, 32),
    (2, 2, 1, 130, 64, 80),
]


def _values(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pair(array, dtype, requires_grad=False):
    """The same values as an ember tensor and a torch tensor of ``dtype``."""
    e = ember.tensor(array.astype(np.float64)).to(getattr(ember, dtype))
    t = torch.tensor(array.astype(np.float64)).to(getattr(torch, dtype))
    if requires_grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


def _np(t):
    if isinstance(t, ember.Tensor):
        return t.detach().to(ember.float64).numpy()
    return t.detach().to(torch.float64).numpy()


def _err(a, b) -> float:
    return float(np.abs(_np(a) - _np(b)).max(initial=0.0))


def _inputs(shape, dtype, seed=0, requires_grad=False):
    b, hq, hkv, sq, skv, d = shape
    arrays = (_values((b, hq, sq, d), seed), _values((b, hkv, skv, d), seed + 1), _values((b, hkv, skv, d), seed + 2))
    pairs = [_pair(a, dtype, requires_grad) for a in arrays]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def test_the_ops_are_registered_by_import_ember():
    code = "import ember; print(ember.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "aten._scaled_dot_product_flash_attention_for_cpu_backward.default"


@needs_torch
@pytest.mark.parametrize(
    "name",
    [
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        "_scaled_dot_product_flash_attention",
    ],
)
def test_schemas_are_pytorchs(name):
    ours = f"aten::{getattr(aten, name).default.schema}"
    theirs = re.sub(r"=0\.(?=[,)])", "=0.0", str(getattr(torch.ops.aten, name).default._schema))
    assert ours == theirs


# -- forward and backward against PyTorch's ops -----------------------------------------------------


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_forward_and_backward_ops_match_pytorch(dtype, shape, is_causal, scale):
    (q, k, v), (tq, tk, tv) = _inputs(shape, dtype)
    out, lse = forward_op(q, k, v, 0.0, is_causal, scale=scale)
    t_out, t_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(tq, tk, tv, 0.0, is_causal, scale=scale)
    assert out.dtype is q.dtype and lse.dtype is getattr(ember, str(t_lse.dtype).split(".")[1])
    assert (tuple(out.shape), out.stride()) == (tuple(t_out.shape), t_out.stride())
    assert (tuple(lse.shape), lse.stride()) == (tuple(t_lse.shape), t_lse.stride())
    assert _err(out, t_out) <= TOL[dtype]
    assert _err(lse, t_lse) <= TOL[dtype]

    # The backward op on the same operands (PyTorch's forward results, so that only the backward differs).
    grad_out, t_grad_out = _pair(_values(tuple(tq.shape), 7), dtype)
    t_out_e = ember.tensor(_np(t_out)).to(q.dtype)
    t_lse_e = ember.tensor(_np(t_lse)).to(lse.dtype)
    grads = backward_op(grad_out, q, k, v, t_out_e, t_lse_e, 0.0, is_causal, scale=scale)
    t_grads = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        t_grad_out, tq, tk, tv, t_out, t_lse, 0.0, is_causal, scale=scale
    )
    for g, tg in zip(grads, t_grads, strict=True):
        assert g.dtype is q.dtype
        assert (tuple(g.shape), g.stride()) == (tuple(tg.shape), tg.stride())
        assert _err(g, tg) <= TOL[dtype] * max(1.0, float(np.abs(_np(tg)).max()))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mask_shape", [(70, 90), (2, 1, 70, 90), (1, 3, 1, 90)])
def test_additive_masks_and_fully_masked_rows(dtype, mask_shape):
    (q, k, v), (tq, tk, tv) = _inputs(SHAPES[0], dtype)
    mask = _values(mask_shape, 5)
    if mask_shape == (70, 90):
        mask[3] = -np.inf  # a fully masked row: output 0, lse 0 (PyTorch's value) and zero gradients
    m, tm = _pair(mask, dtype)
    out, lse = forward_op(q, k, v, attn_mask=m)
    t_out, t_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(tq, tk, tv, attn_mask=tm)
    assert _err(out, t_out) <= TOL[dtype] and _err(lse, t_lse) <= TOL[dtype]
    assert np.isfinite(_np(lse)).all()
    grad_out, t_grad_out = _pair(_values(tuple(tq.shape), 7), dtype)
    grads = backward_op(grad_out, q, k, v, out, lse, 0.0, False, attn_mask=m)
    t_grads = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        t_grad_out, tq, tk, tv, t_out, t_lse, 0.0, False, attn_mask=tm
    )
    for g, tg in zip(grads, t_grads, strict=True):
        assert _err(g, tg) <= TOL[dtype] * max(1.0, float(np.abs(_np(tg)).max()))
    if mask_shape == (70, 90):
        assert not _np(out)[:, :, 3].any() and not _np(grads[0])[:, :, 3].any()


@needs_torch
@pytest.mark.parametrize("layout", ["bshd", "sliced", "sbhd"])
def test_output_layout_follows_the_query(layout):
    b, h, s, d = 2, 3, 33, 16
    base = _values({"bshd": (b, s, h, d), "sliced": (b, h, s, 2 * d), "sbhd": (s, b, h, d)}[layout], 0)
    e, t = _pair(base, "float32")
    view = {
        "bshd": lambda x: x.transpose(1, 2),
        "sliced": lambda x: x[..., :d],
        "sbhd": lambda x: x.permute(1, 2, 0, 3),
    }[layout]
    q, tq = view(e), view(t)
    out, lse = forward_op(q, q, q)
    t_out, t_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(tq, tq, tq)
    assert out.stride() == t_out.stride() and lse.stride() == t_lse.stride()
    assert _err(out, t_out) <= 1e-5


# -- gradients through autograd ---------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[2]], ids=str)
@pytest.mark.parametrize("is_causal", [False, True])
def test_gradients_through_autograd_match_pytorch(dtype, shape, is_causal):
    (q, k, v), (tq, tk, tv) = _inputs(shape, dtype, seed=3, requires_grad=True)
    weight, t_weight = _pair(_values((shape[0], shape[1], shape[3], shape[5]), 11), dtype)
    out, lse = forward_op(q, k, v, is_causal=is_causal, scale=0.25)
    assert out.requires_grad and not lse.requires_grad
    (out * weight).sum().backward()
    t_out, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(tq, tk, tv, is_causal=is_causal, scale=0.25)
    (t_out * t_weight).sum().backward()
    for x, tx in ((q, tq), (k, tk), (v, tv)):
        assert _err(x.grad, tx.grad) <= TOL[dtype] * max(1.0, float(np.abs(_np(tx.grad)).max()))


@needs_torch
def test_a_mask_requiring_grad_is_refused_as_in_pytorch():
    (q, k, v), (tq, tk, tv) = _inputs(SHAPES[0], "float32", requires_grad=True)
    m, tm = _pair(_values((70, 90), 1), "float32", requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'attn_mask'"):
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(tq, tk, tv, attn_mask=tm)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'attn_mask'"):
        forward_op(q, k, v, attn_mask=m)


def test_double_backward_goes_through_the_decomposition():
    q, k, v = (
        ember.randn(*s, dtype=ember.float64, requires_grad=True) for s in ((1, 2, 5, 4), (1, 1, 6, 4), (1, 1, 6, 4))
    )
    assert ember.autograd.gradcheck(lambda a, b, c: forward_op(a, b, c, is_causal=True)[0], (q, k, v))
    assert ember.autograd.gradgradcheck(lambda a, b, c: forward_op(a, b, c)[0], (q, k, v))


# -- meta functions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[2]], ids=str)
def test_meta_outputs_match_the_cpu_kernels(dtype, shape):
    b, hq, hkv, sq, skv, d = shape
    dt = getattr(ember, dtype)
    cpu = [ember.randn(*s).to(dt) for s in ((b, hq, sq, d), (b, hkv, skv, d), (b, hkv, skv, d))]
    meta = [ember.empty(*x.shape, dtype=dt, device="meta") for x in cpu]
    mask = ember.zeros(sq, skv, dtype=dt)
    cpu_results = forward_op(*cpu, attn_mask=mask)
    meta_results = forward_op(*meta, attn_mask=ember.empty(sq, skv, dtype=dt, device="meta"))
    grad = ember.randn(b, hq, sq, d).to(dt)
    cpu_results += backward_op(grad, *cpu, *cpu_results, 0.0, True)
    meta_results += backward_op(ember.empty(b, hq, sq, d, dtype=dt, device="meta"), *meta, *meta_results, 0.0, True)
    for c, m in zip(cpu_results, meta_results, strict=True):
        assert m.device.type == "meta"
        assert (tuple(m.shape), m.stride(), m.dtype) == (tuple(c.shape), c.stride(), c.dtype)


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_the_cuda_ops_meta_function_matches_pytorchs(dtype):
    q = ember.empty(2, 4, 5, 8, dtype=getattr(ember, dtype), device="meta")
    k = ember.empty(2, 2, 7, 8, dtype=getattr(ember, dtype), device="meta")
    tq = torch.empty(2, 4, 5, 8, dtype=getattr(torch, dtype), device="meta")
    tk = torch.empty(2, 2, 7, 8, dtype=getattr(torch, dtype), device="meta")
    ours = cuda_op(q, k, k)
    theirs = torch.ops.aten._scaled_dot_product_flash_attention(tq, tk, tk)
    for i in (0, 1, 8):
        assert (tuple(ours[i].shape), ours[i].stride()) == (tuple(theirs[i].shape), theirs[i].stride())
        assert str(ours[i].dtype).split(".")[1] == str(theirs[i].dtype).split(".")[1]
    assert ours[2:6] == theirs[2:6] == (None, None, 5, 7)
    assert tuple(ours[6].shape) == tuple(theirs[6].shape) and tuple(ours[7].shape) == tuple(theirs[7].shape)


def test_the_cuda_ops_decomposition_is_the_cpu_result():
    q, k = ember.randn(1, 2, 9, 8), ember.randn(1, 2, 9, 8)
    out, lse, *_ = cuda_op.decompose(q, k, k, 0.0, True)
    cpu_out, cpu_lse = forward_op(q, k, k, 0.0, True)
    assert _err(out, cpu_out) <= 1e-6 and _err(lse, cpu_lse) <= 1e-6


# -- the float64 reference, decompositions, vmap, dispatch modes ------------------------------------


@pytest.mark.parametrize("is_causal", [False, True])
def test_float64_against_the_reference(is_causal):
    rng = np.random.default_rng(4)
    q, k, v, g = (rng.standard_normal(s) for s in ((2, 4, 70, 24), (2, 2, 90, 24), (2, 2, 90, 24), (2, 4, 70, 24)))
    out, lse = forward_op(ember.tensor(q), ember.tensor(k), ember.tensor(v), is_causal=is_causal)
    ref_out, ref_lse, _ = reference.forward(q, k, v, is_causal=is_causal)
    assert lse.dtype is ember.float64
    assert _err(out, ember.tensor(ref_out)) <= 1e-12 and _err(lse, ember.tensor(ref_lse)) <= 1e-12
    grads = backward_op(ember.tensor(g), ember.tensor(q), ember.tensor(k), ember.tensor(v), out, lse, 0.0, is_causal)
    for ours, ref in zip(grads, reference.backward(g, q, k, v, is_causal=is_causal), strict=True):
        assert _err(ours, ember.tensor(ref)) <= 1e-12


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_decompositions_agree_with_the_kernels(dtype):
    dt = getattr(ember, dtype)
    q, k, v, g = (ember.randn(*s).to(dt) for s in ((2, 4, 70, 16), (2, 2, 90, 16), (2, 2, 90, 16), (2, 4, 70, 16)))
    mask = ember.randn(70, 90).to(dt)
    tol = TOL[dtype]
    results = forward_op(q, k, v, attn_mask=mask)
    for a, b in zip(results, forward_op.decompose(q, k, v, attn_mask=mask), strict=True):
        assert _err(a, b) <= tol
    grads = backward_op(g, q, k, v, *results, 0.0, False, attn_mask=mask)
    for a, b in zip(grads, backward_op.decompose(g, q, k, v, *results, 0.0, False, attn_mask=mask), strict=True):
        assert _err(a, b) <= tol * max(1.0, float(np.abs(_np(b)).max()))


def test_vmap_batches_through_the_decomposition():
    from ember.func import vmap

    q, k, v = (ember.randn(3, 2, 2, 9, 8) for _ in range(3))
    batched = vmap(lambda a, b, c: forward_op(a, b, c, is_causal=True)[0])(q, k, v)
    for i in range(3):
        assert _err(batched[i], forward_op(q[i], k[i], v[i], is_causal=True)[0]) <= 1e-6


class _Recorder(DispatchMode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, func, types, args, kwargs):
        self.calls.append(func)
        return func(*args, **kwargs)


def test_a_dispatch_mode_sees_each_op_as_one_call():
    q, k, v = (ember.randn(1, 2, 9, 8, requires_grad=True) for _ in range(3))
    with _Recorder() as mode:
        out, _ = forward_op(q, k, v)
    assert mode.calls == [forward_op]
    grad = ember.ones(1, 2, 9, 8)
    with _Recorder() as mode:
        out.backward(grad)
    assert backward_op in mode.calls
    assert not [op for op in mode.calls if op.name in ("bmm", "matmul", "softmax", "_softmax")]


# -- errors -----------------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize(
    "case",
    ["int64", "three_dims", "dropout", "head_size", "mixed_dtype", "mask_dtype", "mask_dims", "mask_shape"],
)
def test_errors_are_pytorchs(case):
    def call(lib, ops_ns):
        f32 = lib.float32
        q, k = lib.ones(2, 2, 5, 8, dtype=f32), lib.ones(2, 2, 6, 8, dtype=f32)
        args, kwargs = [q, k, k], {}
        if case == "int64":
            args = [x.to(lib.int64) for x in args]
        elif case == "three_dims":
            args = [x[0] for x in args]
        elif case == "dropout":
            args.append(0.5)
        elif case == "head_size":
            args[2] = lib.ones(2, 2, 6, 4, dtype=f32)
        elif case == "mixed_dtype":
            args[1] = k.to(lib.float64)
        elif case == "mask_dtype":
            kwargs["attn_mask"] = lib.ones(5, 6, dtype=lib.bool)
        elif case == "mask_dims":
            kwargs["attn_mask"] = lib.ones(6, dtype=f32)
        elif case == "mask_shape":
            kwargs["attn_mask"] = lib.ones(3, 6, dtype=f32)
        return ops_ns._scaled_dot_product_flash_attention_for_cpu(*args, **kwargs)

    with pytest.raises(RuntimeError) as theirs:
        call(torch, torch.ops.aten)
    with pytest.raises(RuntimeError) as ours:
        call(ember, aten)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("case", ["heads", "batch"])
def test_what_pytorchs_kernel_leaves_unchecked_raises(case):
    q = ember.ones(2, 3, 5, 8)
    k = ember.ones(2, 2, 6, 8) if case == "heads" else ember.ones(1, 3, 6, 8)
    with pytest.raises(RuntimeError, match="heads" if case == "heads" else "batch size"):
        forward_op(q, k, k)


def test_empty_inputs_give_empty_or_zero_results():
    out, lse = forward_op(ember.ones(2, 3, 0, 8), ember.ones(2, 3, 6, 8), ember.ones(2, 3, 6, 8))
    assert tuple(out.shape) == (2, 3, 0, 8) and tuple(lse.shape) == (2, 3, 0)
    out, lse = forward_op(ember.ones(2, 3, 4, 8), ember.ones(2, 3, 0, 8), ember.ones(2, 3, 0, 8))
    assert not _np(out).any() and not _np(lse).any()
