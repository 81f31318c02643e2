"""The C++ FlashAttention-2 kernel against the float64 reference, feature by feature.

Every output is filled with NaN before a run, so an element the kernel forgets to write fails the
comparison. Sizes are chosen around the kernel's 64-row and 64-key tiles (not multiples of them).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ember.core import threads
from ember.sdpa import reference
from ember.sdpa.kernels import flash_cpu


@pytest.fixture(autouse=True)
def _every_call_on_three_threads(monkeypatch):
    """Run every call of these tests in three parts, whatever its size (small calls would run in the
    caller alone), so that tasks are claimed by threads racing for them, one more than CI's cores."""
    monkeypatch.setattr(flash_cpu, "_PARALLEL_MACS", 0)
    before = threads.get_num_threads()
    threads.set_num_threads(3)
    yield
    threads.set_num_threads(before)


# Relative Frobenius error bounds against the float64 reference. float64 gradients are bounded by
# the float32 lse the forward saves (P is recomputed from it), hence 1e-6 rather than 1e-12.
BOUNDS = {
    np.float32: {"out": 1e-5, "grad": 1e-5},
    np.float64: {"out": 1e-12, "grad": 1e-6},
    np.float16: {"out": 2e-3, "grad": 4e-3},
    ml_dtypes.bfloat16: {"out": 1.5e-2, "grad": 3e-2},
}


def _empty(shape, dtype, layout):
    """A NaN-filled array of ``shape`` in memory order ``layout``: "bhsd" (contiguous), "bshd"
    (heads inside sequence, as a permuted (B, S, H, D) array) or "reversed" (negative strides)."""
    if layout == "bshd":
        b, h, s, d = shape
        return np.full((b, s, h, d), np.nan, dtype=dtype).transpose(0, 2, 1, 3)
    x = np.full(shape, np.nan, dtype=dtype)
    return x[:, ::-1, ::-1, :] if layout == "reversed" else x


def _random(rng, shape, dtype, layout="bhsd"):
    x = _empty(shape, dtype, layout)
    x[...] = rng.standard_normal(shape).astype(dtype)
    return x


def _rel(ours, ref):
    return np.linalg.norm(np.asarray(ours, np.float64) - ref) / np.linalg.norm(ref)


def _attention(q, k, v, grad_out, layout="bhsd", **kwargs):
    """Forward and backward of flash_cpu into NaN-poisoned outputs of the given layout."""
    out = _empty(q.shape, q.dtype, layout)
    lse = np.full(q.shape[:3], np.nan, np.float32)
    flash_cpu.forward(q, k, v, out, lse, **kwargs)
    grads = [_empty(x.shape, x.dtype, layout) for x in (q, k, v)]
    flash_cpu.backward(grad_out, q, k, v, out, lse, *grads, **kwargs)
    return out, lse, grads


def _check(rng, b, hq, hkv, sq, skv, d, dtype=np.float32, layout="bhsd", **kwargs):
    q = _random(rng, (b, hq, sq, d), dtype, layout)
    k, v = (_random(rng, (b, hkv, skv, d), dtype, layout) for _ in range(2))
    grad_out = _random(rng, q.shape, dtype, layout)
    out, lse, grads = _attention(q, k, v, grad_out, layout, **kwargs)
    ref_out, ref_lse, _ = reference.forward(q, k, v, **kwargs)
    ref_grads = reference.backward(grad_out, q, k, v, **kwargs)
    bound = BOUNDS[dtype]
    assert _rel(out, ref_out) < bound["out"]
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-5, atol=1e-5)
    for name, ours, ref in zip(("grad_q", "grad_k", "grad_v"), grads, ref_grads, strict=True):
        assert _rel(ours, ref) < bound["grad"], name
    return out, lse, grads


SHAPES = [
    dict(b=2, hq=3, hkv=3, sq=37, skv=45, d=16),
    dict(b=1, hq=2, hkv=2, sq=130, skv=130, d=64, is_causal=True),
    dict(b=1, hq=2, hkv=2, sq=50, skv=150, d=32, is_causal=True),
    dict(b=1, hq=2, hkv=2, sq=150, skv=50, d=32, is_causal=True),
    dict(b=2, hq=6, hkv=2, sq=70, skv=65, d=24),
    dict(b=1, hq=4, hkv=1, sq=65, skv=129, d=80, is_causal=True),
    dict(b=1, hq=1, hkv=1, sq=40, skv=70, d=128, scale=0.3),
    dict(b=1, hq=1, hkv=1, sq=33, skv=66, d=256),
    dict(b=1, hq=1, hkv=1, sq=1, skv=3, d=8),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
def test_matches_reference_in_float32(shape):
    _check(np.random.default_rng(), **shape)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, ml_dtypes.bfloat16], ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("is_causal", [False, True])
def test_other_dtypes(dtype, is_causal):
    rng = np.random.default_rng()
    mask = None if is_causal else rng.standard_normal((1, 4, 70, 90)).astype(dtype)  # a mask of q's dtype
    _check(rng, 2, 4, 2, 70, 90, 40, dtype=dtype, is_causal=is_causal, mask=mask)


@pytest.mark.parametrize("layout", ["bshd", "reversed"])
def test_any_strides_for_inputs_and_outputs(layout):
    _check(np.random.default_rng(), 2, 4, 2, 67, 75, 32, layout=layout, is_causal=True)


def test_strided_lse_and_sliced_head_dim():
    rng = np.random.default_rng()
    q, k, v, grad_out = (rng.standard_normal((1, 2, 70, 48)).astype(np.float32)[..., ::2] for _ in range(4))
    out = np.full((1, 2, 70, 48), np.nan, np.float32)[..., 1::2]
    lse = np.full((1, 2, 140), np.nan, np.float32)[..., ::2]
    flash_cpu.forward(q, k, v, out, lse)
    ref_out, ref_lse, _ = reference.forward(q, k, v)
    assert _rel(out, ref_out) < 1e-5
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-5, atol=1e-5)
    grads = [np.full((1, 2, 70, 48), np.nan, np.float32)[..., ::2] for _ in range(3)]
    flash_cpu.backward(grad_out, q, k, v, out, lse, *grads)
    for ours, ref in zip(grads, reference.backward(grad_out, q, k, v), strict=True):
        assert _rel(ours, ref) < 1e-5


@pytest.mark.parametrize("mask_shape", [(1, 1, 70, 90), (2, 1, 1, 90), (70, 90)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks_broadcast_with_stride_zero(mask_shape, kind):
    rng = np.random.default_rng()
    if kind == "bool":
        mask = rng.random(mask_shape) < 0.7
        mask[..., 0] = True
    else:
        mask = rng.standard_normal(mask_shape).astype(np.float32)
        mask[rng.random(mask_shape) < 0.2] = -np.inf
        mask[..., 0] = 0.0
    _check(rng, 2, 4, 2, 70, 90, 32, mask=mask, is_causal=kind == "float")


def test_fully_masked_rows_give_zeros_infinite_lse_and_zero_grads():
    rng = np.random.default_rng()
    mask = rng.random((1, 2, 70, 80)) < 0.8
    mask[0, 0, 3] = False
    mask[0, 1, 66] = False
    float_mask = np.where(mask, np.float32(0.5), np.float32(-np.inf))
    for m in (mask, float_mask):
        out, lse, (gq, gk, gv) = _check(rng, 1, 2, 1, 70, 80, 16, mask=m)
        assert np.all(out[0, 0, 3] == 0) and np.all(out[0, 1, 66] == 0)
        assert np.isposinf(lse[0, 0, 3]) and np.isposinf(lse[0, 1, 66])
        assert np.all(gq[0, 0, 3] == 0) and np.all(gq[0, 1, 66] == 0)
        assert np.all(np.isfinite(gk)) and np.all(np.isfinite(gv))


def test_empty_key_sequence_masks_every_row():
    rng = np.random.default_rng()
    q, grad_out = (rng.standard_normal((1, 2, 5, 8)) for _ in range(2))
    k = v = np.zeros((1, 2, 0, 8))
    out, lse, (gq, _, _) = _attention(q, k, v, grad_out)
    assert np.all(out == 0) and np.all(np.isposinf(lse)) and np.all(gq == 0)


@pytest.mark.parametrize("is_causal", [False, True])
def test_dropout_matches_reference(is_causal):
    _check(np.random.default_rng(), 2, 4, 2, 70, 90, 32, dropout_p=0.25, seed=1234, offset=77, is_causal=is_causal)


def test_dropout_mask_is_the_reference_mask_exactly():
    # With V = identity, row i of the output is row i of the dropped-out P: its zeros are the mask.
    rng = np.random.default_rng()
    b, h, s = 2, 2, 80
    seed, offset = 2**40 + 12345, 2**32 - 1000  # both 32-bit words of the key and of the counter move
    q, k = (rng.standard_normal((b, h, s, s)).astype(np.float32) * 0.1 for _ in range(2))
    v = np.broadcast_to(np.eye(s, dtype=np.float32), (b, h, s, s)).copy()
    out = np.full(q.shape, np.nan, np.float32)
    lse = np.full(q.shape[:3], np.nan, np.float32)
    flash_cpu.forward(q, k, v, out, lse, dropout_p=0.4, seed=seed, offset=offset)
    keep = reference.dropout_keep((b, h, s, s), 0.4, seed, offset)
    np.testing.assert_array_equal(out != 0, keep)
    _, _, ref_p = reference.forward(q, k, v, dropout_p=0.4, seed=seed, offset=offset)
    np.testing.assert_allclose(out, ref_p, rtol=1e-5, atol=1e-7)


def test_dropout_is_reproducible_and_seed_dependent():
    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal((1, 2, 40, 16)).astype(np.float32) for _ in range(3))
    runs = []
    for seed in (5, 5, 6):
        out, lse = np.empty_like(q), np.empty(q.shape[:3], np.float32)
        flash_cpu.forward(q, k, v, out, lse, dropout_p=0.5, seed=seed)
        runs.append(out)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def _valid_args(dtype=np.float32):
    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal((1, 2, 4, 8)).astype(dtype) for _ in range(3))
    return q, k, v, np.empty_like(q), np.empty((1, 2, 4), np.float32)


def _overlapping(shape):
    base = np.zeros(64, np.float32)
    return np.lib.stride_tricks.as_strided(base, shape, (0, 0, 4, 4), writeable=True)


def _odd_strides():
    raw = np.zeros(1 + 64 * 4, np.uint8)[1:]
    return np.lib.stride_tricks.as_strided(raw.view(np.float32), (1, 2, 4, 8), (256, 128, 32, 2))


FORWARD_ERRORS = [
    ("a NumPy array", lambda q, k, v, o, lse: (q.tolist(), k, v, o, lse), {}),
    ("4 dimensions", lambda q, k, v, o, lse: (q[0], k, v, o, lse), {}),
    ("not supported", lambda q, k, v, o, lse: (q.astype(np.int32), k, v, o, lse), {}),
    ("k has dtype", lambda q, k, v, o, lse: (q, k.astype(np.float64), v, o, lse), {}),
    ("batch or head dim", lambda q, k, v, o, lse: (q, k[..., :4], v[..., :4], o, lse), {}),
    ("v has shape", lambda q, k, v, o, lse: (q, k, v[:, :, :3], o, lse), {}),
    ("not a multiple", lambda q, k, v, o, lse: (q, np.concatenate([k] * 3, 1), np.concatenate([v] * 3, 1), o, lse), {}),
    ("mask has dtype", lambda *a: a, {"mask": np.zeros((4, 4))}),
    ("does not broadcast", lambda *a: a, {"mask": np.ones((3, 4), bool)}),
    ("mask must be", lambda *a: a, {"mask": [[True] * 4] * 4}),
    ("dropout_p", lambda *a: a, {"dropout_p": 1.0}),
    ("dropout_p", lambda *a: a, {"dropout_p": -0.1}),
    ("scale", lambda *a: a, {"scale": float("nan")}),
    ("seed", lambda *a: a, {"seed": 1.5}),
    ("is_causal", lambda *a: a, {"is_causal": "yes"}),
    ("out has shape", lambda q, k, v, o, lse: (q, k, v, o[:, :1], lse), {}),
    ("out has dtype", lambda q, k, v, o, lse: (q, k, v, o.astype(np.float64), lse), {}),
    ("not writeable", lambda q, k, v, o, lse: (q, k, v, np.broadcast_to(o, o.shape), lse), {}),
    ("overlapping elements", lambda q, k, v, o, lse: (q, k, v, _overlapping(o.shape), lse), {}),
    ("out overlaps q", lambda q, k, v, o, lse: (q, k, v, q, lse), {}),
    ("lse has dtype", lambda q, k, v, o, lse: (q, k, v, o, lse.astype(np.float64)), {}),
    ("lse has shape", lambda q, k, v, o, lse: (q, k, v, o, lse[:, :, :2]), {}),
    ("multiples of its itemsize", lambda q, k, v, o, lse: (_odd_strides(), k, v, o, lse), {}),
]


@pytest.mark.parametrize("message,change,kwargs", FORWARD_ERRORS, ids=[e[0] for e in FORWARD_ERRORS])
def test_forward_rejects_bad_arguments(message, change, kwargs):
    with pytest.raises(ValueError, match=message):
        flash_cpu.forward(*change(*_valid_args()), **kwargs)


BACKWARD_ERRORS = [
    ("grad_out has shape", lambda go, gq, gk, gv: (go[:, :, :2], gq, gk, gv)),
    ("grad_q has dtype", lambda go, gq, gk, gv: (go, gq.astype(np.float64), gk, gv)),
    ("grad_k has shape", lambda go, gq, gk, gv: (go, gq, gk[:, :1], gv)),
    ("grad_v is not writeable", lambda go, gq, gk, gv: (go, gq, gk, np.broadcast_to(gv, gv.shape))),
    ("grad_k overlaps grad_q", lambda go, gq, gk, gv: (go, gq, gq, gv)),
    ("grad_q overlaps grad_out", lambda go, gq, gk, gv: (go, go, gk, gv)),
]


@pytest.mark.parametrize("message,change", BACKWARD_ERRORS, ids=[e[0] for e in BACKWARD_ERRORS])
def test_backward_rejects_bad_arguments(message, change):
    q, k, v, out, lse = _valid_args()
    flash_cpu.forward(q, k, v, out, lse)
    grads = (np.random.default_rng().standard_normal(q.shape).astype(np.float32), *map(np.empty_like, (q, k, v)))
    go, gq, gk, gv = change(*grads)
    with pytest.raises(ValueError, match=message):
        flash_cpu.backward(go, q, k, v, out, lse, gq, gk, gv)


THREAD_CASES = [
    dict(b=1, hq=4, hkv=1, sq=200, skv=330, d=40, is_causal=True),  # one head: its key tiles split 6 ways
    dict(b=3, hq=4, hkv=2, sq=100, skv=90, d=24, dropout_p=0.3, seed=5),  # 6 heads, split in 2
    dict(b=4, hq=2, hkv=2, sq=70, skv=70, d=16),  # 8 heads: no split
]


@pytest.mark.parametrize("case", THREAD_CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_results_do_not_depend_on_the_thread_count(case):
    """Every output bit is the same on one thread and on several (the backward's split of a head's
    key tiles, and so the order its dQ partials are summed in, is fixed by the problem)."""
    case = dict(case)
    b, hq, hkv, sq, skv, d = (case.pop(key) for key in ("b", "hq", "hkv", "sq", "skv", "d"))
    rng = np.random.default_rng(0)
    q, grad_out = (_random(rng, (b, hq, sq, d), np.float32) for _ in range(2))
    k, v = (_random(rng, (b, hkv, skv, d), np.float32) for _ in range(2))
    results = []
    for count in (1, 2, 5):
        threads.set_num_threads(count)
        out, lse, grads = _attention(q, k, v, grad_out, **case)
        results.append([out, lse, *grads])
    for other in results[1:]:
        for ours, theirs in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_a_call_runs_in_as_many_parts_as_threads(monkeypatch):
    parts = []
    run_parts = threads.run_parts

    def counting(count, work):
        parts.append(count)
        run_parts(count, work)

    monkeypatch.setattr(threads, "run_parts", counting)
    monkeypatch.setattr(flash_cpu, "_PARALLEL_MACS", 1 << 21)
    rng = np.random.default_rng(0)
    big = [_random(rng, (2, 4, 256, 64), np.float32) for _ in range(4)]
    small = [_random(rng, (1, 1, 16, 16), np.float32) for _ in range(4)]
    for count in (1, 2, 3):
        threads.set_num_threads(count)
        parts.clear()
        _attention(*big)
        assert parts == [count, count]  # the forward, the backward (8 heads: no dQ sums to finish)
        parts.clear()
        _attention(*small)  # below the threshold: in the caller
        assert parts == [1, 1]
