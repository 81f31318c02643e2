"""The Triton FlashAttention-2 kernels against the float64 reference.

Runs on CUDA, or on the CPU under Triton's interpreter (``TRITON_INTERPRET=1``, set before Python starts:
Triton reads it when the kernels are defined); skipped elsewhere. The interpreter is slow, so shapes are
small but cover several blocks of 16 with ragged ends. Every output is poisoned with NaN first.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from ember.sdpa import reference
from ember.sdpa.kernels import flash_triton

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
HAS_TRITON = importlib.util.find_spec("triton") is not None
torch = pytest.importorskip("torch", reason="torch tensors carry the data; it is installed in the 3.11 test session")
HAS_CUDA = torch.cuda.is_available()
pytestmark = pytest.mark.skipif(
    not (HAS_TRITON and (INTERPRET or HAS_CUDA)),
    reason="needs Triton and either TRITON_INTERPRET=1 or a CUDA device (nox -s triton_interpret / cuda)",
)
DEVICE = "cpu" if INTERPRET else "cuda"
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# ‖out − ref‖ / ‖ref‖ bounds: float32 accumulates in float32; half types round P and dS to 8 or 11 bits.
TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}


def _tensor(array: np.ndarray, dtype: str, layout: str):
    """``array`` as a tensor of ``dtype``; "strided" stores it as (B, S, H, D) seen through a transpose."""
    if layout == "strided":
        base = torch.tensor(np.ascontiguousarray(array.transpose(0, 2, 1, 3)), dtype=DTYPES[dtype], device=DEVICE)
        return base.transpose(1, 2)
    return torch.tensor(array, dtype=DTYPES[dtype], device=DEVICE)


def _poisoned(shape, dtype, layout: str = "contiguous"):
    """A NaN-filled output; "strided" gives every other element of a wider buffer."""
    if layout == "strided":
        return torch.full((*shape[:-1], 2 * shape[-1]), float("nan"), dtype=dtype, device=DEVICE)[..., ::2]
    return torch.full(shape, float("nan"), dtype=dtype, device=DEVICE)


def _numpy(tensor) -> np.ndarray:
    return tensor.detach().to(device="cpu", dtype=torch.float64).numpy()


def _relative(got, want: np.ndarray) -> float:
    got = _numpy(got)
    assert not np.isnan(got).any()
    norm = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (norm if norm else 1.0))


def _assert_lse(lse, want: np.ndarray) -> None:
    got = _numpy(lse)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


def _run(case: dict, dtype: str = "float32", layout: str = "contiguous", rng_seed: int = 0):
    """Forward and backward of one case through the kernels and the reference; returns relative errors."""
    rng = np.random.default_rng(rng_seed)
    b, hq, hkv, sq, skv, d = (case[key] for key in ("b", "hq", "hkv", "sq", "skv", "d"))
    q = _tensor(rng.standard_normal((b, hq, sq, d)), dtype, layout)
    k = _tensor(rng.standard_normal((b, hkv, skv, d)), dtype, layout)
    v = _tensor(rng.standard_normal((b, hkv, skv, d)), dtype, layout)
    grad_out = _tensor(rng.standard_normal((b, hq, sq, d)), dtype, layout)
    mask, mask_np = case.get("mask"), None
    if mask is not None:
        mask_np = mask(rng, case)
        mask = torch.tensor(mask_np, device=DEVICE)
        if mask.dtype != torch.bool:
            mask = mask.to(DTYPES[dtype])
            mask_np = _numpy(mask)
    kwargs = dict(
        mask=None,
        is_causal=case.get("causal", False),
        scale=case.get("scale"),
        dropout_p=case.get("dropout_p", 0.0),
        seed=case.get("seed", 0),
        offset=case.get("offset", 0),
    )
    out = _poisoned(q.shape, q.dtype, layout)
    lse = _poisoned((b, hq, sq), torch.float32, layout)
    flash_triton.forward(q, k, v, out, lse, **{**kwargs, "mask": mask})
    arrays = [_numpy(t) for t in (q, k, v)]
    want_out, want_lse, _ = reference.forward(*arrays, **{**kwargs, "mask": mask_np})
    grads = [_poisoned(t.shape, t.dtype, layout) for t in (q, k, v)]
    flash_triton.backward(grad_out, q, k, v, out, lse, *grads, **{**kwargs, "mask": mask})
    want_grads = reference.backward(_numpy(grad_out), *arrays, **{**kwargs, "mask": mask_np})
    _assert_lse(lse, want_lse)
    return [_relative(out, want_out)] + [_relative(g, w) for g, w in zip(grads, want_grads, strict=True)]


def _bool_mask(rng, case):
    return rng.random((1, 1, case["sq"], case["skv"])) < 0.6


def _float_mask(rng, case):
    return rng.standard_normal((case["b"], 1, case["sq"], case["skv"]))


def _key_padding_mask(rng, case):
    """A 1-D float mask over keys (broadcast over batch, heads and queries) with -inf for padding."""
    mask = np.zeros(case["skv"])
    mask[-5:] = -np.inf
    return mask


CASES = {
    "plain, ragged lengths, padded head dim": dict(b=2, hq=2, hkv=2, sq=37, skv=45, d=40),
    "causal, Sq > Skv": dict(b=1, hq=2, hkv=2, sq=45, skv=29, d=16, causal=True),
    "causal, Sq < Skv, GQA": dict(b=1, hq=4, hkv=2, sq=20, skv=50, d=32, causal=True),
    "GQA 4:1": dict(b=2, hq=4, hkv=1, sq=19, skv=33, d=64),
    "bool mask broadcast, scale": dict(b=2, hq=2, hkv=1, sq=33, skv=24, d=16, mask=_bool_mask, scale=0.3),
    "float mask per batch, causal": dict(b=2, hq=2, hkv=2, sq=30, skv=30, d=24, mask=_float_mask, causal=True),
    "1-D key padding mask": dict(b=1, hq=2, hkv=2, sq=17, skv=40, d=16, mask=_key_padding_mask),
    "head dim 256": dict(b=1, hq=1, hkv=1, sq=9, skv=21, d=256),
    "head dim 128, causal": dict(b=1, hq=2, hkv=1, sq=24, skv=24, d=128, causal=True),
    "head dim 8": dict(b=1, hq=2, hkv=2, sq=18, skv=18, d=8),
    "dropout, GQA, causal": dict(
        b=2, hq=4, hkv=2, sq=21, skv=35, d=16, causal=True, dropout_p=0.3, seed=2**40 + 3, offset=12345
    ),
    "dropout, float mask": dict(b=1, hq=2, hkv=2, sq=33, skv=20, d=32, mask=_float_mask, dropout_p=0.1, seed=7),
}


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("name", list(CASES))
def test_float32_matches_reference(name, layout):
    if layout == "strided" and name.startswith("head dim"):
        pytest.skip("one layout is enough for the head-dim cases")
    errors = _run(CASES[name], "float32", layout)
    assert max(errors) < TOLERANCE["float32"], errors


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    "name",
    ["causal, Sq < Skv, GQA", "bool mask broadcast, scale", "float mask per batch, causal", "dropout, GQA, causal"],
)
def test_half_precision_matches_reference(name, dtype):
    errors = _run(CASES[name], dtype)
    assert max(errors) < TOLERANCE[dtype], errors


def test_mask_read_through_transposed_and_expanded_strides():
    rng = np.random.default_rng(9)
    b, hq, hkv, sq, skv, d = 2, 2, 1, 19, 23, 16
    q, grad_out = (torch.tensor(rng.standard_normal((b, hq, sq, d)), dtype=torch.float32) for _ in range(2))
    k, v = (torch.tensor(rng.standard_normal((b, hkv, skv, d)), dtype=torch.float32) for _ in range(2))
    q, grad_out, k, v = (t.to(DEVICE) for t in (q, grad_out, k, v))
    stored = torch.tensor(rng.standard_normal((skv, sq)), dtype=torch.float32, device=DEVICE)
    mask = stored.t().expand(b, hq, sq, skv)  # strides (0, 0, 1, sq)
    out, lse = _poisoned(q.shape, q.dtype), _poisoned((b, hq, sq), torch.float32)
    flash_triton.forward(q, k, v, out, lse, mask=mask, is_causal=True)
    grads = [_poisoned(t.shape, t.dtype) for t in (q, k, v)]
    flash_triton.backward(grad_out, q, k, v, out, lse, *grads, mask=mask, is_causal=True)
    arrays = [_numpy(t) for t in (q, k, v)]
    want_out, want_lse, _ = reference.forward(*arrays, mask=_numpy(mask), is_causal=True)
    want_grads = reference.backward(_numpy(grad_out), *arrays, mask=_numpy(mask), is_causal=True)
    _assert_lse(lse, want_lse)
    for got, want in zip([out, *grads], [want_out, *want_grads], strict=True):
        assert _relative(got, want) < TOLERANCE["float32"]


def test_single_query_and_single_key():
    """Lengths of 1 (which Triton compiles as constants on a GPU)."""
    for sq, skv in ((1, 20), (20, 1), (1, 1)):
        errors = _run(dict(b=1, hq=2, hkv=1, sq=sq, skv=skv, d=16, causal=sq == 20, dropout_p=0.2, seed=1))
        assert max(errors) < TOLERANCE["float32"], (sq, skv, errors)


def test_dropout_mask_is_the_reference_mask_exactly():
    """With v = I, out[..., i, :Skv] is row i of the dropped-out P: its zeros are the dropped elements."""
    b, hq, hkv, sq, skv, p, seed, offset = 2, 2, 1, 24, 32, 0.25, 1234, 2**33 + 5
    rng = np.random.default_rng(3)
    q = torch.tensor(0.3 * rng.standard_normal((b, hq, sq, skv)), dtype=torch.float32, device=DEVICE)
    k = torch.tensor(0.3 * rng.standard_normal((b, hkv, skv, skv)), dtype=torch.float32, device=DEVICE)
    v = torch.eye(skv, device=DEVICE).expand(b, hkv, skv, skv)
    outs = []
    for _ in range(2):
        out, lse = _poisoned(q.shape, torch.float32), _poisoned((b, hq, sq), torch.float32)
        flash_triton.forward(q, k, v, out, lse, dropout_p=p, seed=seed, offset=offset)
        outs.append(_numpy(out))
    np.testing.assert_array_equal(outs[0], outs[1])
    keep = reference.dropout_keep((b, hq, sq, skv), p, seed, offset)
    np.testing.assert_array_equal(outs[0] != 0, keep)
    _, _, probs = reference.forward(_numpy(q), _numpy(k), _numpy(v), dropout_p=p, seed=seed, offset=offset)
    np.testing.assert_allclose(outs[0], probs, rtol=1e-5, atol=1e-7)
    moved = _poisoned(q.shape, torch.float32)
    flash_triton.forward(q, k, v, moved, lse, dropout_p=p, seed=seed, offset=offset + 1)
    assert not np.array_equal(_numpy(moved) != 0, keep)


def _fully_masked_case(kind: str):
    def mask(rng, case):
        keep = rng.random((case["b"], 1, case["sq"], case["skv"])) < 0.7
        keep[0, :, [3, 10]] = False
        keep[1, :, 0] = False
        if kind == "bool":
            return keep
        return np.where(keep, rng.standard_normal(keep.shape), -np.inf)

    return dict(b=2, hq=2, hkv=1, sq=20, skv=18, d=16, mask=mask)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_rows_give_zeros_and_zero_gradients(kind):
    case = _fully_masked_case(kind)
    rng = np.random.default_rng(5)
    q, k, v, grad_out = (
        torch.tensor(rng.standard_normal(shape), dtype=torch.float32, device=DEVICE)
        for shape in ((2, 2, 20, 16), (2, 1, 18, 16), (2, 1, 18, 16), (2, 2, 20, 16))
    )
    mask_np = case["mask"](rng, case)
    mask = torch.tensor(mask_np, dtype=torch.bool if kind == "bool" else torch.float32, device=DEVICE)
    mask_np = _numpy(mask) if kind == "float" else mask_np
    out, lse = _poisoned(q.shape, q.dtype), _poisoned((2, 2, 20), torch.float32)
    flash_triton.forward(q, k, v, out, lse, mask=mask)
    grads = [_poisoned(t.shape, t.dtype) for t in (q, k, v)]
    flash_triton.backward(grad_out, q, k, v, out, lse, *grads, mask=mask)
    for row in ((0, slice(None), 3), (0, slice(None), 10), (1, slice(None), 0)):
        assert (_numpy(out)[row] == 0).all() and (_numpy(grads[0])[row] == 0).all()
        assert np.isposinf(_numpy(lse)[row]).all()
    arrays = [_numpy(t) for t in (q, k, v)]
    want_out, want_lse, _ = reference.forward(*arrays, mask=mask_np)
    want_grads = reference.backward(_numpy(grad_out), *arrays, mask=mask_np)
    _assert_lse(lse, want_lse)
    for got, want in zip([out, *grads], [want_out, *want_grads], strict=True):
        assert _relative(got, want) < TOLERANCE["float32"]


def test_empty_key_sequence_gives_zeros_and_infinite_lse():
    q = torch.ones(1, 2, 5, 16, device=DEVICE)
    k = v = torch.ones(1, 2, 0, 16, device=DEVICE)
    out, lse = _poisoned(q.shape, q.dtype), _poisoned((1, 2, 5), torch.float32)
    flash_triton.forward(q, k, v, out, lse)
    assert (_numpy(out) == 0).all() and np.isposinf(_numpy(lse)).all()
    grad_q = _poisoned(q.shape, q.dtype)
    flash_triton.backward(torch.ones_like(q), q, k, v, out, lse, grad_q, k.clone(), v.clone())
    assert (_numpy(grad_q) == 0).all()


def test_empty_query_sequence_gives_zero_key_gradients():
    q = torch.ones(1, 2, 0, 16, device=DEVICE)
    k = v = torch.ones(1, 1, 6, 16, device=DEVICE)
    out, lse = torch.empty_like(q), torch.empty(1, 2, 0, device=DEVICE)
    flash_triton.forward(q, k, v, out, lse)
    grad_k, grad_v = _poisoned(k.shape, k.dtype), _poisoned(v.shape, v.dtype)
    flash_triton.backward(q, q, k, v, out, lse, torch.empty_like(q), grad_k, grad_v)
    assert (_numpy(grad_k) == 0).all() and (_numpy(grad_v) == 0).all()


def _inputs(**changes):
    """Valid forward arguments (q, k, v, out, lse) with some replaced."""
    args = dict(
        q=torch.zeros(1, 4, 8, 16, device=DEVICE),
        k=torch.zeros(1, 2, 6, 16, device=DEVICE),
        v=torch.zeros(1, 2, 6, 16, device=DEVICE),
        out=torch.zeros(1, 4, 8, 16, device=DEVICE),
        lse=torch.zeros(1, 4, 8, device=DEVICE),
    )
    args.update(changes)
    return args


FORWARD_ERRORS = {
    "q must be a tensor": lambda: (_inputs(q=[[1.0]]), {}),
    "q must be 4-D": lambda: (_inputs(q=torch.zeros(4, 8, 16, device=DEVICE)), {}),
    "k and v must have the same shape": lambda: (_inputs(v=torch.zeros(1, 2, 7, 16, device=DEVICE)), {}),
    "same batch size": lambda: (
        _inputs(k=torch.zeros(2, 2, 6, 16, device=DEVICE), v=torch.zeros(2, 2, 6, 16, device=DEVICE)),
        {},
    ),
    "same head_dim": lambda: (
        _inputs(k=torch.zeros(1, 2, 6, 8, device=DEVICE), v=torch.zeros(1, 2, 6, 8, device=DEVICE)),
        {},
    ),
    "must be a multiple of the key/value heads": lambda: (
        _inputs(k=torch.zeros(1, 3, 6, 16, device=DEVICE), v=torch.zeros(1, 3, 6, 16, device=DEVICE)),
        {},
    ),
    "head_dim must be between 1 and 256": lambda: (
        _inputs(
            q=torch.zeros(1, 4, 8, 512, device=DEVICE),
            k=torch.zeros(1, 2, 6, 512, device=DEVICE),
            v=torch.zeros(1, 2, 6, 512, device=DEVICE),
            out=torch.zeros(1, 4, 8, 512, device=DEVICE),
        ),
        {},
    ),
    "q must be float16, bfloat16 or float32": lambda: (
        _inputs(q=torch.zeros(1, 4, 8, 16, dtype=torch.float64, device=DEVICE)),
        {},
    ),
    "k must have q's dtype": lambda: (_inputs(k=torch.zeros(1, 2, 6, 16, dtype=torch.float16, device=DEVICE)), {}),
    "out must have q's dtype": lambda: (_inputs(out=torch.zeros(1, 4, 8, 16, dtype=torch.bfloat16, device=DEVICE)), {}),
    "lse must have dtype float32": lambda: (_inputs(lse=torch.zeros(1, 4, 8, dtype=torch.float16, device=DEVICE)), {}),
    "out must have the shape of q": lambda: (_inputs(out=torch.zeros(1, 4, 8, 8, device=DEVICE)), {}),
    "lse must have the shape of (batch, heads_q, seq_q)": lambda: (
        _inputs(lse=torch.zeros(1, 4, 9, device=DEVICE)),
        {},
    ),
    "output out has overlapping memory": lambda: (
        _inputs(out=torch.zeros(1, 1, 8, 16, device=DEVICE).expand(1, 4, 8, 16)),
        {},
    ),
    "mask must be bool or float16/bfloat16/float32": lambda: (
        _inputs(),
        {"mask": torch.zeros(8, 6, dtype=torch.int32, device=DEVICE)},
    ),
    "does not broadcast": lambda: (_inputs(), {"mask": torch.zeros(8, 5, device=DEVICE)}),
    "mask must have at most 4 dimensions": lambda: (_inputs(), {"mask": torch.zeros(1, 1, 1, 8, 6, device=DEVICE)}),
    "all tensors must be on one device": lambda: (_inputs(k=torch.zeros(1, 2, 6, 16, device="meta")), {}),
    "dropout_p must be in [0, 1)": lambda: (_inputs(), {"dropout_p": 1.0}),
    "dropout_p must be in [0, 1), got -0.1": lambda: (_inputs(), {"dropout_p": -0.1}),
    "seed must be an int": lambda: (_inputs(), {"seed": -1}),
    "offset must be a non-negative int": lambda: (_inputs(), {"offset": -5}),
    "overflows the 64-bit counter": lambda: (_inputs(), {"offset": 2**63 - 10}),
    "spans 2\\*\\*31 elements or more": lambda: (
        _inputs(q=torch.empty_strided((1, 4, 8, 16), (0, 16, 2**29, 1), device="meta")),
        {},
    ),
    "is_causal must be a bool": lambda: (_inputs(), {"is_causal": "yes"}),
    "scale must be finite": lambda: (_inputs(), {"scale": float("inf")}),
}


@pytest.mark.parametrize("message", list(FORWARD_ERRORS))
def test_forward_errors(message):
    args, kwargs = FORWARD_ERRORS[message]()
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        flash_triton.forward(*args.values(), **kwargs)


@pytest.mark.parametrize(
    "name, replacement, message",
    [
        ("grad_k", lambda: torch.zeros(1, 2, 7, 16, device=DEVICE), "grad_k must have the shape of k"),
        ("grad_q", lambda: torch.zeros(1, 4, 8, 16, dtype=torch.float16, device=DEVICE), "grad_q must have q's dtype"),
        ("grad_out", lambda: torch.zeros(1, 4, 8, 8, device=DEVICE), "grad_out must have the shape of q"),
        # Expanded on the device: moving an expanded tensor to CUDA copies it into dense memory.
        (
            "grad_v",
            lambda: torch.zeros(1, 1, 6, 16, device=DEVICE).expand(1, 2, 6, 16),
            "output grad_v has overlapping memory",
        ),
    ],
)
def test_backward_errors(name, replacement, message):
    args = dict(grad_out=torch.zeros(1, 4, 8, 16), **_inputs(), grad_q=torch.zeros(1, 4, 8, 16))
    args.update(grad_k=torch.zeros(1, 2, 6, 16), grad_v=torch.zeros(1, 2, 6, 16))
    args = {key: value.to(DEVICE) for key, value in args.items()}
    args[name] = replacement()
    with pytest.raises(ValueError, match=message):
        flash_triton.backward(*args.values())


@pytest.mark.skipif(INTERPRET, reason="the interpreter runs on any device")
def test_cpu_tensors_need_the_interpreter():
    args = {name: tensor.cpu() for name, tensor in _inputs().items()}
    with pytest.raises(ValueError, match="must be on a CUDA device"):
        flash_triton.forward(*args.values())
