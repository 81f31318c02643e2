"""FlashAttention-2 in Triton: ``forward`` and ``backward`` writing into caller-allocated outputs.

The conventions (shapes, grouped-query heads, masks, top-left causal, ``lse = +inf`` and zeros for fully
masked rows, Philox dropout) are those of ``ember.sdpa.reference``; the kernels live in
``_triton_flash``. Arguments are any tensor-likes with ``data_ptr()``, ``shape``, ``stride()`` and
``dtype`` (torch tensors today), with any strides; every check raises a ValueError naming the argument
and the property. Triton is imported on the first call, so this module imports without it. Tensors must
be on CUDA, or anywhere (CPU included) when Triton runs its interpreter (``TRITON_INTERPRET=1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_FLOATS = ("float16", "bfloat16", "float32")
MAX_HEAD_DIM = 256
_kernels = None


def _load_kernels():
    global _kernels
    if _kernels is None:
        try:
            from ember.sdpa.kernels import _triton_flash
        except ImportError as error:
            raise RuntimeError(
                f"ember.sdpa.kernels.flash_triton needs Triton, which could not be imported ({error}); "
                "install it with `pip install triton`"
            ) from error
        _kernels = _triton_flash
    return _kernels


def _dtype_name(tensor) -> str:
    return str(tensor.dtype).rsplit(".", 1)[-1]


def _require_tensor(name: str, tensor) -> None:
    if not all(hasattr(tensor, attr) for attr in ("data_ptr", "shape", "stride", "dtype", "device")):
        raise ValueError(
            f"flash_triton: {name} must be a tensor (with data_ptr, shape, stride, dtype and device), "
            f"got {type(tensor).__name__}"
        )


def _non_overlapping(shape, stride) -> bool:
    """True when no two indices of the view address the same element (safe to write in parallel)."""
    extent = 0
    for step, size in sorted((abs(st), sz) for st, sz in zip(stride, shape, strict=True) if sz > 1):
        if step <= extent:
            return False
        extent += step * (size - 1)
    return True


def _check_slice_offsets(name: str, shape: tuple[int, ...], stride: tuple[int, ...]) -> None:
    """Within one (batch, head) slice the kernels index in int32 (batch and head offsets are int64)."""
    if sum((size - 1) * abs(int(step)) for size, step in zip(shape, stride, strict=True) if size) >= 2**31:
        raise ValueError(
            f"flash_triton: {name} spans 2**31 elements or more within one (batch, head) slice "
            f"(shape {shape}, strides {stride}); the kernels index a slice with 32-bit offsets"
        )


@dataclass(frozen=True)
class _Geometry:
    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_kv: int
    head_dim: int
    mask_kind: int
    mask_strides: tuple[int, int, int, int]
    scale: float
    dropout_p: float


def _check_shape(name: str, tensor, expected: tuple[int, ...], like: str) -> None:
    if tuple(tensor.shape) != expected:
        raise ValueError(f"flash_triton: {name} must have the shape of {like} {expected}, got {tuple(tensor.shape)}")


def _mask_strides(mask, target: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """The mask's strides broadcast to (B, Hq, Sq, Skv): 0 along every broadcast dimension."""
    shape, stride = tuple(mask.shape), tuple(mask.stride())
    if len(shape) > 4:
        raise ValueError(f"flash_triton: mask must have at most 4 dimensions, got shape {shape}")
    shape = (1,) * (4 - len(shape)) + shape
    stride = (0,) * (4 - len(stride)) + stride
    strides = []
    for size, step, want in zip(shape, stride, target, strict=True):
        if size == want:
            strides.append(step if want > 1 else 0)
        elif size == 1:
            strides.append(0)
        else:
            raise ValueError(f"flash_triton: mask of shape {tuple(mask.shape)} does not broadcast to {target}")
    return tuple(strides)


def _check(kernels, q, k, v, outputs: dict, inputs: dict, mask, is_causal, scale, dropout_p, seed, offset) -> _Geometry:
    for name, tensor in {"q": q, "k": k, "v": v, **inputs, **outputs}.items():
        _require_tensor(name, tensor)
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if len(tensor.shape) != 4:
            raise ValueError(
                f"flash_triton: {name} must be 4-D (batch, heads, seq, head_dim), got shape {tuple(tensor.shape)}"
            )
    batch, heads_q, seq_q, head_dim = (int(x) for x in q.shape)
    _, heads_kv, seq_kv, _ = (int(x) for x in k.shape)
    if tuple(k.shape) != tuple(v.shape):
        raise ValueError(f"flash_triton: k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if int(k.shape[0]) != batch:
        raise ValueError(f"flash_triton: q and k must have the same batch size, got {batch} and {int(k.shape[0])}")
    if int(k.shape[3]) != head_dim:
        raise ValueError(f"flash_triton: q and k must have the same head_dim, got {head_dim} and {int(k.shape[3])}")
    if (heads_kv == 0 and heads_q != 0) or (heads_kv and heads_q % heads_kv):
        raise ValueError(
            f"flash_triton: the query heads ({heads_q}) must be a multiple of the key/value heads ({heads_kv})"
        )
    if not 1 <= head_dim <= MAX_HEAD_DIM:
        raise ValueError(f"flash_triton: head_dim must be between 1 and {MAX_HEAD_DIM}, got {head_dim}")
    dtype = _dtype_name(q)
    if dtype not in _FLOATS:
        raise ValueError(f"flash_triton: q must be float16, bfloat16 or float32, got dtype {dtype}")
    for name, tensor in {"k": k, "v": v, **inputs, **outputs}.items():
        if name == "lse":
            continue
        if _dtype_name(tensor) != dtype:
            raise ValueError(f"flash_triton: {name} must have q's dtype {dtype}, got dtype {_dtype_name(tensor)}")
    lse = outputs.get("lse", inputs.get("lse"))
    if _dtype_name(lse) != "float32":
        raise ValueError(f"flash_triton: lse must have dtype float32, got dtype {_dtype_name(lse)}")
    expected = {"out": q.shape, "grad_out": q.shape, "grad_q": q.shape, "grad_k": k.shape, "grad_v": k.shape}
    for name, tensor in {**inputs, **outputs}.items():
        if name == "lse":
            _check_shape(name, tensor, (batch, heads_q, seq_q), "(batch, heads_q, seq_q)")
        else:
            _check_shape(
                name, tensor, tuple(int(x) for x in expected[name]), "k" if name.endswith(("_k", "_v")) else "q"
            )
    for name, tensor in {"q": q, "k": k, "v": v, **inputs, **outputs}.items():
        _check_slice_offsets(name, tuple(tensor.shape)[2:], tuple(tensor.stride())[2:])
    for name, tensor in outputs.items():
        if not _non_overlapping(tuple(tensor.shape), tuple(tensor.stride())):
            raise ValueError(f"flash_triton: output {name} has overlapping memory (strides {tuple(tensor.stride())})")

    mask_kind, mask_strides = 0, (0, 0, 0, 0)
    named = {"q": q, "k": k, "v": v, **inputs, **outputs}
    if mask is not None:
        _require_tensor("mask", mask)
        mask_dtype = _dtype_name(mask)
        if mask_dtype == "bool":
            mask_kind = 1
        elif mask_dtype in _FLOATS:
            mask_kind = 2
        else:
            raise ValueError(f"flash_triton: mask must be bool or float16/bfloat16/float32, got dtype {mask_dtype}")
        mask_strides = _mask_strides(mask, (batch, heads_q, seq_q, seq_kv))
        _check_slice_offsets("mask", (seq_q, seq_kv), mask_strides[2:])
        named["mask"] = mask
    devices = {name: str(tensor.device) for name, tensor in named.items()}
    if len(set(devices.values())) > 1:
        raise ValueError(f"flash_triton: all tensors must be on one device, got devices {devices}")
    device = devices["q"]
    if not kernels.INTERPRET and not device.startswith("cuda"):
        raise ValueError(
            f"flash_triton: tensors must be on a CUDA device (device {device} needs TRITON_INTERPRET=1), got {device}"
        )

    if not isinstance(is_causal, bool):
        raise ValueError(f"flash_triton: is_causal must be a bool, got {is_causal!r}")
    scale = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
    if not math.isfinite(scale):
        raise ValueError(f"flash_triton: scale must be finite, got {scale}")
    dropout_p = float(dropout_p)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"flash_triton: dropout_p must be in [0, 1), got {dropout_p}")
    if not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"flash_triton: seed must be an int in [0, 2**64), got {seed!r}")
    if not isinstance(offset, int) or offset < 0:
        raise ValueError(f"flash_triton: offset must be a non-negative int, got {offset!r}")
    if offset + batch * heads_q * seq_q * seq_kv >= 2**63:
        raise ValueError(f"flash_triton: offset {offset} plus the number of scores overflows the 64-bit counter")
    return _Geometry(batch, heads_q, heads_kv, seq_q, seq_kv, head_dim, mask_kind, mask_strides, scale, dropout_p)


def _meta(kernels, geo: _Geometry, q, is_causal: bool) -> dict:
    """The compile-time arguments shared by every kernel of one call."""
    return dict(
        HEAD_DIM=geo.head_dim,
        BLOCK_D=max(16, 1 << (geo.head_dim - 1).bit_length()),
        IS_CAUSAL=is_causal,
        MASK_KIND=geo.mask_kind,
        HAS_DROPOUT=geo.dropout_p > 0.0,
        DOT_PRECISION="ieee" if _dtype_name(q) == "float32" else "tf32",
        UPCAST_DOT=kernels.INTERPRET and _dtype_name(q) == "bfloat16",
    )


def _strides(tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in tensor.stride())


def _grid(blocks: str, rows: int, heads: int, batch: int):
    return lambda meta: (_cdiv(rows, meta[blocks]), heads, batch)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def forward(q, k, v, out, lse, *, mask=None, is_causal=False, scale=None, dropout_p=0.0, seed=0, offset=0) -> None:
    """Attention of q over (k, v) into ``out`` (like q) and ``lse`` (B, Hq, Sq) float32."""
    kernels = _load_kernels()
    geo = _check(kernels, q, k, v, {"out": out, "lse": lse}, {}, mask, is_causal, scale, dropout_p, seed, offset)
    if geo.batch * geo.heads_q * geo.seq_q == 0:
        return
    mask_arg = q if mask is None else mask
    kernels._fwd[_grid("BLOCK_M", geo.seq_q, geo.heads_q, geo.batch)](
        q, k, v, out, lse, mask_arg,
        *_strides(q), *_strides(k), *_strides(v), *_strides(out), *_strides(lse), *geo.mask_strides,
        geo.heads_q, geo.seq_q, geo.seq_kv, geo.heads_q // geo.heads_kv,
        geo.scale * kernels.LOG2E, geo.dropout_p, seed, offset,
        **_meta(kernels, geo, q, is_causal),
    )  # fmt: skip


def backward(
    grad_out,
    q,
    k,
    v,
    out,
    lse,
    grad_q,
    grad_k,
    grad_v,
    *,
    mask=None,
    is_causal=False,
    scale=None,
    dropout_p=0.0,
    seed=0,
    offset=0,
) -> None:
    """Gradients of ``forward`` (same arguments, and its ``out`` and ``lse``) into grad_q, grad_k, grad_v."""
    kernels = _load_kernels()
    geo = _check(
        kernels,
        q,
        k,
        v,
        {"grad_q": grad_q, "grad_k": grad_k, "grad_v": grad_v},
        {"grad_out": grad_out, "out": out, "lse": lse},
        mask,
        is_causal,
        scale,
        dropout_p,
        seed,
        offset,
    )
    if geo.batch * geo.heads_kv == 0:
        return
    meta = _meta(kernels, geo, q, is_causal)
    mask_arg = q if mask is None else mask
    group = geo.heads_q // geo.heads_kv
    if geo.seq_q:
        # delta = rowsum(dO * O): scratch of (B, Hq, Sq) float32 on q's device.
        delta = q.new_empty((geo.batch, geo.heads_q, geo.seq_q), dtype=lse.dtype)
        block = kernels.PREPROCESS_BLOCK_M
        kernels._bwd_preprocess[(_cdiv(geo.seq_q, block), geo.heads_q, geo.batch)](
            out, grad_out, delta, *_strides(out), *_strides(grad_out), geo.heads_q, geo.seq_q,
            HEAD_DIM=geo.head_dim, BLOCK_D=meta["BLOCK_D"], BLOCK_M=block,
        )  # fmt: skip
    else:
        delta = lse
    shared = (
        geo.heads_q, geo.seq_q, geo.seq_kv, group, geo.scale, geo.scale * kernels.LOG2E, geo.dropout_p, seed, offset
    )  # fmt: skip
    if geo.seq_kv:
        kernels._bwd_dkdv[_grid("BLOCK_N", geo.seq_kv, geo.heads_kv, geo.batch)](
            q, k, v, grad_out, lse, delta, grad_k, grad_v, mask_arg,
            *_strides(q), *_strides(k), *_strides(v), *_strides(grad_out), *_strides(lse),
            *_strides(grad_k), *_strides(grad_v), *geo.mask_strides, *shared, **meta,
        )  # fmt: skip
    if geo.seq_q:
        kernels._bwd_dq[_grid("BLOCK_M", geo.seq_q, geo.heads_q, geo.batch)](
            q, k, v, grad_out, lse, delta, grad_q, mask_arg,
            *_strides(q), *_strides(k), *_strides(v), *_strides(grad_out), *_strides(lse),
            *_strides(grad_q), *geo.mask_strides, *shared, **meta,
        )  # fmt: skip
