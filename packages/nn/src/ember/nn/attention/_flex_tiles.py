"""The tiled FlexAttention kernels on NumPy arrays: forward with online softmax, and its backward.

The score matrix is cut into tiles of (query block) x (run of key blocks); batch and heads are folded
into every tile, so each tile is one batched matmul over (B, Hkv[, G]) and a handful of NumPy calls.
``score_mod`` and ``mask_mod`` run once per tile on ember tensors: the raw scores (B, H, Lq, Lkv) and
the broadcast index tensors b (B,1,1,1), h (1,H,1,1), q_idx (1,1,Lq,1), kv_idx (1,1,1,Lkv).

Which tiles run comes from a block ``status`` (Bm, Hm, nq, nkv) over the block grid: 0 empty
(skipped), 1 partial (mask_mod applied), 2 full (mask_mod skipped). A tile is computed for all
batches and heads at once if any of them needs it; where the status differs between heads, the
mask of the tile is "full, or partial and the mask_mod keeps it", which is exact for any status.
Consecutive key blocks of one query block with the same status are merged into one wider tile.

Memory beyond inputs and outputs: a few tiles and one query block's accumulators (forward), plus
gradients the size of the inputs (backward); never a Q_LEN x KV_LEN matrix.

The log-sum-exp is natural-log, of the modded and masked scores; a query row with every key masked
gets ``lse = -inf`` and an output of zeros, as PyTorch's flex_attention.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from ember.autograd import grad as autograd_grad
from ember.autograd.grad_mode import enable_grad
from ember.core.creation import from_numpy
from ember.core.tensor import Tensor
from ember.nn.attention._block_mask import as_bool_array, index_tensors
from ember.nn.attention._parallel import run_rows, single_threaded_blas

# Tile of the computation when no BlockMask is given (query rows x key columns).
DENSE_TILE = (128, 512)

# Widest tile along the keys made by merging key blocks of the same status.
MAX_TILE_KV = 512


class Plan:
    """Tiles to compute: per query block, runs of key blocks with their per-(batch, head) status."""

    def __init__(self, status: np.ndarray | None, q_len: int, kv_len: int, bq: int, bk: int) -> None:
        self.q_len, self.kv_len, self.bq, self.bk = q_len, kv_len, bq, bk
        self.rows: list[tuple[int, int, list[tuple[int, int, np.ndarray | None]]]] = []
        nq, nkv = -(-q_len // bq), -(-kv_len // bk)
        for i in range(nq):
            q0, q1 = i * bq, min(q_len, (i + 1) * bq)
            tiles: list[tuple[int, int, np.ndarray | None]] = []
            if status is None:
                step = max(bk, MAX_TILE_KV // bk * bk)
                tiles = [(k0, min(kv_len, k0 + step), None) for k0 in range(0, kv_len, step)]
            else:
                row = status[:, :, i, :nkv]
                live = np.flatnonzero(row.max(axis=(0, 1)))
                j = 0
                while j < len(live):
                    start = live[j]
                    st = row[:, :, start]
                    end = start + 1
                    while (
                        j + 1 < len(live)
                        and live[j + 1] == end
                        and (end + 1 - start) * bk <= MAX_TILE_KV
                        and np.array_equal(row[:, :, end], st)
                    ):
                        j += 1
                        end += 1
                    j += 1
                    k0, k1 = start * bk, min(kv_len, end * bk)
                    if k0 < k1:
                        tiles.append((k0, k1, None if (st == 2).all() else st))
            self.rows.append((q0, q1, tiles))


def _tile_keep(mask_mod: Callable, st: np.ndarray, B: int, H: int, q0: int, q1: int, k0: int, k1: int):
    """The tile's bool keep array (broadcastable to (B, H, Lq, Lkv)) for a status that is not all full."""
    partial = st == 1
    keep = as_bool_array(mask_mod(*index_tensors(B, H, q0, q1, k0, k1)))
    if partial.all():
        return keep
    return (st == 2)[:, :, None, None] | (partial[:, :, None, None] & keep)


def _modded(score_mod: Callable | None, s: np.ndarray, B: int, H: int, q0, q1, k0, k1) -> np.ndarray:
    if score_mod is None:
        return s
    value = score_mod(from_numpy(s), *index_tensors(B, H, q0, q1, k0, k1))
    arr = value.detach().numpy() if isinstance(value, Tensor) else np.asarray(value)
    if arr.shape == s.shape and arr.dtype == s.dtype and arr.flags.writeable and not np.shares_memory(arr, s):
        return arr
    return np.array(np.broadcast_to(arr, s.shape), dtype=s.dtype)


def forward(q, k, v, score_mod, mask_mod, plan: Plan, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """out (B, Hq, L, Ev), natural-log lse and row max of the scores (B, Hq, L), in q's (compute) dtype."""
    B, Hq, L, _ = q.shape
    dt = q.dtype
    out = np.empty((B, Hq, L, v.shape[3]), dtype=dt)
    lse = np.empty((B, Hq, L), dtype=dt)
    row_max = np.empty((B, Hq, L), dtype=dt)
    mods = _Mods(score_mod, mask_mod)

    def row(n: int) -> None:
        _forward_row(q, k, v, mods, plan.rows[n], scale, out, lse, row_max)

    with single_threaded_blas():
        run_rows(len(plan.rows), row)
    return out, lse, row_max


class _Mods:
    """score_mod and mask_mod behind one lock: ember ops run in one thread at a time, the NumPy
    arithmetic of the tiles (which releases the GIL) in all of them."""

    def __init__(self, score_mod, mask_mod) -> None:
        self.score_mod, self.mask_mod = score_mod, mask_mod
        self.lock = threading.Lock()

    def modded(self, s, B, H, q0, q1, k0, k1):
        if self.score_mod is None:
            return s
        with self.lock:
            return _modded(self.score_mod, s, B, H, q0, q1, k0, k1)

    def keep(self, st, B, H, q0, q1, k0, k1):
        with self.lock:
            return _tile_keep(self.mask_mod, st, B, H, q0, q1, k0, k1)


def _forward_row(q, k, v, mods: _Mods, row, scale, out, lse, row_max) -> None:
    B, Hq, L, E = q.shape
    Hkv, Ev = k.shape[1], v.shape[3]
    G = Hq // Hkv
    dt = q.dtype
    ninf = dt.type(-np.inf)
    q0, q1, tiles = row
    n = q1 - q0
    qt = (q.reshape(B, Hkv, G, L, E)[:, :, :, q0:q1] * dt.type(scale)).reshape(B, Hkv, G * n, E)
    kT = k.swapaxes(-1, -2)
    m = np.full((B, Hq, n), ninf, dtype=dt)
    denom = np.zeros((B, Hq, n), dtype=dt)
    acc = np.zeros((B, Hkv, G * n, Ev), dtype=dt)
    for k0, k1, st in tiles:
        s = np.matmul(qt, kT[..., k0:k1]).reshape(B, Hq, n, k1 - k0)
        s = mods.modded(s, B, Hq, q0, q1, k0, k1)
        if st is not None:
            np.copyto(s, ninf, where=~mods.keep(st, B, Hq, q0, q1, k0, k1))
        m_new = np.maximum(m, s.max(axis=-1))
        safe = np.where(m_new == ninf, 0, m_new)
        s -= safe[..., None]
        np.exp(s, out=s)
        alpha = np.exp(m - safe)
        denom *= alpha
        denom += s.sum(axis=-1)
        acc *= alpha.reshape(B, Hkv, G * n, 1)
        acc += np.matmul(s.reshape(B, Hkv, G * n, k1 - k0), v[:, :, k0:k1])
        m = m_new
    empty = denom == 0
    denom[empty] = 1
    out[:, :, q0:q1] = acc.reshape(B, Hq, n, Ev) / denom[..., None]
    with np.errstate(divide="ignore"):
        lse[:, :, q0:q1] = np.where(empty, ninf, m + np.log(denom))
    row_max[:, :, q0:q1] = m


def backward(
    grad_out,
    grad_lse,
    q,
    k,
    v,
    out,
    lse,
    score_mod,
    mask_mod,
    plan: Plan,
    scale: float,
    captured: Sequence[Tensor],
):
    """Gradients for q, k, v (compute dtype) and for the tensors ``captured`` by score_mod (or None)."""
    B, Hq, L, E = q.shape
    Hkv = k.shape[1]
    G = Hq // Hkv
    dt = q.dtype
    delta = np.einsum("bhld,bhld->bhl", grad_out, out)
    if grad_lse is not None:
        delta -= grad_lse
    lse_safe = np.where(lse == -np.inf, np.inf, lse)
    dq = np.zeros((B, Hkv, G, L, E), dtype=dt)
    dk, dv = np.zeros(k.shape, dtype=dt), np.zeros(v.shape, dtype=dt)
    cap_grads: list = [None] * len(captured)
    with single_threaded_blas():
        _backward_rows(
            grad_out, q, k, v, delta, lse_safe, score_mod, mask_mod, plan, scale, captured, dq, dk, dv, cap_grads
        )
    dq *= dt.type(scale)
    dk *= dt.type(scale)
    return dq.reshape(B, Hq, L, E), dk, dv, cap_grads


def _backward_rows(
    grad_out, q, k, v, delta, lse_safe, score_mod, mask_mod, plan, scale, captured, dq, dk, dv, cap_grads
):
    B, Hq, L, E = q.shape
    Hkv, Ev = k.shape[1], v.shape[3]
    G = Hq // Hkv
    dt = q.dtype
    q5 = q.reshape(B, Hkv, G, L, E)
    kT = k.swapaxes(-1, -2)
    do5 = grad_out.reshape(B, Hkv, G, L, Ev)
    for q0, q1, tiles in plan.rows:
        n = q1 - q0
        q4 = np.ascontiguousarray(q5[:, :, :, q0:q1]).reshape(B, Hkv, G * n, E)
        do4 = np.ascontiguousarray(do5[:, :, :, q0:q1]).reshape(B, Hkv, G * n, Ev)
        for k0, k1, st in tiles:
            w = k1 - k0
            s = np.matmul(q4, kT[..., k0:k1]).reshape(B, Hq, n, w)
            s *= dt.type(scale)
            mod_t = None
            if score_mod is None:
                p = s
            else:
                raw = from_numpy(s).requires_grad_(True)
                with enable_grad():
                    mod_t = score_mod(raw, *index_tensors(B, Hq, q0, q1, k0, k1))
                p = np.array(np.broadcast_to(mod_t.detach().numpy(), s.shape), dtype=dt)
            p -= lse_safe[:, :, q0:q1, None]
            np.exp(p, out=p)
            if st is not None:
                np.copyto(p, 0, where=~_tile_keep(mask_mod, st, B, Hq, q0, q1, k0, k1))
            p4 = p.reshape(B, Hkv, G * n, w)
            dv[:, :, k0:k1] += np.matmul(p4.swapaxes(-1, -2), do4)
            dp = np.matmul(do4, v[:, :, k0:k1].swapaxes(-1, -2)).reshape(B, Hq, n, w)
            dp -= delta[:, :, q0:q1, None]
            dp *= p
            ds = dp
            if mod_t is not None:
                ds = _score_mod_grads(mod_t, raw, captured, ds, cap_grads)
            ds4 = ds.reshape(B, Hkv, G * n, w)
            dq[:, :, :, q0:q1] += np.matmul(ds4, k[:, :, k0:k1]).reshape(B, Hkv, G, n, E)
            dk[:, :, k0:k1] += np.matmul(ds4.swapaxes(-1, -2), q4)


def _score_mod_grads(mod_t: Tensor, raw: Tensor, captured, ds: np.ndarray, cap_grads: list) -> np.ndarray:
    """Pull the tile's gradient ``ds`` (w.r.t. the modded scores) back through score_mod."""
    g = ds
    if tuple(mod_t.shape) != ds.shape:  # score_mod gave a broadcast result: sum over broadcast dims
        g = _sum_to(ds, tuple(mod_t.shape))
    if not mod_t.requires_grad:
        return np.zeros_like(ds)
    grads = autograd_grad(
        mod_t,
        [raw, *captured],
        grad_outputs=from_numpy(np.ascontiguousarray(g)),
        allow_unused=True,
        # A captured tensor with history (slopes = w * 2) is an input here; what its own graph saved
        # must survive for the outer backward, which carries the gradient on through it.
        retain_graph=True,
    )
    for i, gi in enumerate(grads[1:]):
        if gi is not None:
            cap_grads[i] = gi.detach() if cap_grads[i] is None else cap_grads[i] + gi.detach()
    return np.zeros_like(ds) if grads[0] is None else np.asarray(grads[0].detach().numpy())


def _sum_to(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    lead = a.ndim - len(shape)
    a = a.sum(axis=tuple(range(lead))) if lead else a
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and a.shape[i] != 1)
    return a.sum(axis=axes, keepdims=True) if axes else a
