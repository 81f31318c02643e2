"""``BlockMask`` and the mask_mod helpers of FlexAttention, with PyTorch's fields and conventions.

A BlockMask cuts the (Q_LEN, KV_LEN) score matrix into blocks of ``BLOCK_SIZE = (Q_BLOCK, KV_BLOCK)``
and lists, per (batch, head, query block), the key blocks that must be computed: ``kv_num_blocks``
and ``kv_indices`` hold the *partial* blocks (some positions masked: the mask_mod runs there),
``full_kv_num_blocks`` and ``full_kv_indices`` the *full* ones (nothing masked: the mask_mod is
skipped). Blocks in neither list are empty and never computed. The ``q_*`` fields are the same
lists transposed (per key block, the query blocks), as the backward reads them. Indices are int32;
each row lists its blocks in ascending order, then the unused ones, as PyTorch's stable argsort.

``create_block_mask`` evaluates the mask_mod a band of query blocks at a time on broadcast index
tensors ``b (B,1,1,1), h (1,H,1,1), q_idx (1,1,Lq,1), kv_idx (1,1,1,Lkv)``, so it never holds a
Q_LEN x KV_LEN mask when the mask_mod does not depend on every index; positions past the sequence
ends count as masked, so a ragged last block is partial, as in PyTorch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from ember.core import dtypes as D
from ember.core.creation import from_numpy
from ember.core.tensor import Tensor

__all__ = ["BlockMask", "and_masks", "create_block_mask", "create_mask", "noop_mask", "or_masks"]

_DEFAULT_BLOCK = 128
# Elements of mask evaluated at once by create_block_mask (per batch/head the mask_mod depends on).
_BAND_ELEMENTS = 1 << 22


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """A mask_mod that keeps every position."""
    return batch.new_ones((), dtype=D.bool_)


def or_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod keeping a position when any of ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=D.bool_)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod keeping a position when every one of ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=D.bool_)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


def index_tensors(B: int, H: int, q0: int, q1: int, k0: int, k1: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Broadcastable int32 index tensors for a tile: b (B,1,1,1), h (1,H,1,1), q (1,1,Lq,1), kv (1,1,1,Lkv)."""
    return (
        from_numpy(np.arange(B, dtype=np.int32).reshape(B, 1, 1, 1)),
        from_numpy(np.arange(H, dtype=np.int32).reshape(1, H, 1, 1)),
        from_numpy(np.arange(q0, q1, dtype=np.int32).reshape(1, 1, q1 - q0, 1)),
        from_numpy(np.arange(k0, k1, dtype=np.int32).reshape(1, 1, 1, k1 - k0)),
    )


def as_bool_array(value: object) -> np.ndarray:
    """A mask_mod's result (a bool tensor, or a Python bool) as a NumPy bool array."""
    if isinstance(value, Tensor):
        if value.dtype is not D.bool_:
            raise RuntimeError(f"mask_mod must return a bool tensor, got dtype {value.dtype}")
        return value.detach().numpy()
    return np.asarray(bool(value))


def _eval_mask(mask_mod: Callable, B: int, H: int, q0: int, q1: int, k0: int, k1: int) -> np.ndarray:
    keep = as_bool_array(mask_mod(*index_tensors(B, H, q0, q1, k0, k1)))
    return keep.reshape((1,) * (4 - keep.ndim) + keep.shape)


def create_mask(mod_fn: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device="cpu") -> Tensor:
    """The dense (B, H, Q_LEN, KV_LEN) bool mask of a mask_mod (or, for a score_mod, where it is finite)."""
    B, H = B or 1, H or 1
    if _arity(mod_fn) == 5:
        score = from_numpy(np.zeros((1, 1, 1, 1), dtype=np.float32))
        value = mod_fn(score, *index_tensors(B, H, 0, Q_LEN, 0, KV_LEN))
        keep = np.isfinite(value.detach().numpy()) if isinstance(value, Tensor) else np.isfinite(np.asarray(value))
    else:
        keep = _eval_mask(mod_fn, B, H, 0, Q_LEN, 0, KV_LEN)
    keep = np.broadcast_to(keep, (B, H, Q_LEN, KV_LEN))
    return from_numpy(np.ascontiguousarray(keep))


def _arity(fn: Callable) -> int:
    import inspect

    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 4


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _block_status(mask_mod: Callable, B: int, H: int, q_len: int, kv_len: int, bq: int, bk: int) -> np.ndarray:
    """(B, H, nq, nkv) int8: 0 empty, 1 partial, 2 full, evaluated a band of blocks at a time.

    Bands hold at most ``_BAND_ELEMENTS`` positions even if the mask_mod depends on every batch and
    head (most do not, and then the mask_mod's result is smaller still).
    """
    nq, nkv = _cdiv(q_len, bq), _cdiv(kv_len, bk)
    status = np.zeros((B, H, nq, nkv), dtype=np.int8)
    per_block = bq * bk * B * H
    kv_band = max(1, min(nkv, _BAND_ELEMENTS // per_block))
    q_band = max(1, _BAND_ELEMENTS // (per_block * nkv)) if kv_band == nkv else 1
    for i0 in range(0, nq, q_band):
        i1 = min(nq, i0 + q_band)
        q0, q1 = i0 * bq, min(q_len, i1 * bq)
        for j0 in range(0, nkv, kv_band):
            j1 = min(nkv, j0 + kv_band)
            k0, k1 = j0 * bk, min(kv_len, j1 * bk)
            keep = _eval_mask(mask_mod, B, H, q0, q1, k0, k1)
            kb, kh = keep.shape[0], keep.shape[1]
            padded = np.zeros((kb, kh, (i1 - i0) * bq, (j1 - j0) * bk), dtype=np.bool_)
            padded[:, :, : q1 - q0, : k1 - k0] = keep
            count = np.count_nonzero(padded.reshape(kb, kh, i1 - i0, bq, j1 - j0, bk), axis=(3, 5))
            status[:, :, i0:i1, j0:j1] = np.where(count == bq * bk, 2, np.where(count > 0, 1, 0))
    return status


def _dense_to_ordered(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    num = dense.sum(-1, dtype=np.int32)
    order = np.argsort(-dense.astype(np.int8), axis=-1, kind="stable").astype(np.int32)
    return num, order


def _ordered_to_dense(num: np.ndarray, indices: np.ndarray, num_cols: int) -> np.ndarray:
    valid = np.arange(indices.shape[-1]) < num[..., None]
    dense = np.zeros((*indices.shape[:-1], num_cols + 1), dtype=np.int32)
    np.put_along_axis(dense, np.where(valid, indices, num_cols).astype(np.intp), 1, axis=-1)
    return dense[..., :num_cols]


def _np(t: Tensor | None) -> np.ndarray | None:
    return None if t is None else np.asarray(t.detach().numpy())


def _t(a: np.ndarray | None) -> Tensor | None:
    return None if a is None else from_numpy(np.ascontiguousarray(a))


class BlockMask:
    """Block-sparse description of an attention mask; see the module docstring for its fields."""

    def __init__(
        self,
        seq_lengths: tuple[int, int],
        kv_num_blocks: Tensor,
        kv_indices: Tensor,
        full_kv_num_blocks: Tensor | None,
        full_kv_indices: Tensor | None,
        q_num_blocks: Tensor | None,
        q_indices: Tensor | None,
        full_q_num_blocks: Tensor | None,
        full_q_indices: Tensor | None,
        BLOCK_SIZE: tuple[int, int],
        mask_mod: Callable,
    ) -> None:
        if kv_indices.ndim < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE = tuple(BLOCK_SIZE)
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(
        cls,
        kv_num_blocks: Tensor,
        kv_indices: Tensor,
        full_kv_num_blocks: Tensor | None = None,
        full_kv_indices: Tensor | None = None,
        BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_BLOCK,
        mask_mod: Callable | None = None,
        seq_lengths: tuple[int, int] | None = None,
        compute_q_blocks: bool = True,
    ) -> BlockMask:
        """A BlockMask from its key-block lists; the query-block lists are derived by transposing them."""
        if kv_indices.ndim < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise RuntimeError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_num = q_idx = full_q_num = full_q_idx = None
        if compute_q_blocks:
            q_num, q_idx = (_t(a) for a in _transpose_ordered(_np(kv_num_blocks), _np(kv_indices)))
            if full_kv_num_blocks is not None:
                pair = _transpose_ordered(_np(full_kv_num_blocks), _np(full_kv_indices))
                full_q_num, full_q_idx = (_t(a) for a in pair)
        bs = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * bs[0], kv_indices.shape[-1] * bs[1])
        return cls(
            seq_lengths,
            kv_num_blocks,
            kv_indices,
            full_kv_num_blocks,
            full_kv_indices,
            q_num,
            q_idx,
            full_q_num,
            full_q_idx,
            bs,
            noop_mask if mask_mod is None else mask_mod,
        )

    def as_tuple(self, flatten: bool = True) -> tuple:
        fields = (
            self.kv_num_blocks,
            self.kv_indices,
            self.full_kv_num_blocks,
            self.full_kv_indices,
            self.q_num_blocks,
            self.q_indices,
            self.full_q_num_blocks,
            self.full_q_indices,
        )
        bs = self.BLOCK_SIZE if flatten else (self.BLOCK_SIZE,)
        return (*self.seq_lengths, *fields, *bs, self.mask_mod)

    @property
    def shape(self) -> tuple[int, ...]:
        return (*self.kv_indices.shape[:-2], *self.seq_lengths)

    def numel(self) -> int:
        return int(np.prod(self.shape))

    def sparsity(self) -> float:
        """Percentage of the mask's positions in blocks that are not computed."""
        computed = int(_np(self.kv_num_blocks).sum())
        if self.full_kv_num_blocks is not None:
            computed += int(_np(self.full_kv_num_blocks).sum())
        return 100 * (1 - computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def _dense_np(self) -> np.ndarray:
        dense = _ordered_to_dense(_np(self.kv_num_blocks), _np(self.kv_indices), self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            full = _np(self.full_kv_indices)
            dense = dense | _ordered_to_dense(_np(self.full_kv_num_blocks), full, full.shape[-1])
        return dense

    def to_dense(self) -> Tensor:
        """The (..., num_q_blocks, num_kv_blocks) int32 map of computed blocks."""
        return from_numpy(self._dense_np())

    def status(self) -> np.ndarray:
        """(B, H, nq, nkv) int8 over the kv block grid: 0 empty, 1 partial, 2 full."""
        nkv = self.kv_indices.shape[-1]
        st = _ordered_to_dense(_np(self.kv_num_blocks), _np(self.kv_indices), nkv).astype(np.int8)
        if self.full_kv_num_blocks is not None:
            full = _ordered_to_dense(_np(self.full_kv_num_blocks), _np(self.full_kv_indices), nkv)
            st = np.where(full > 0, np.int8(2), st)
        return st.reshape((1,) * (4 - st.ndim) + st.shape)

    def to_string(self, grid_size: int | tuple[int, int] = (20, 20), limit: int = 4) -> str:
        """A picture of the computed blocks: full cells ``█``, partly computed ``░``, skipped blank."""
        dense = self._dense_np()
        *batch_dims, rows, cols = dense.shape
        if isinstance(grid_size, int):
            max_rows = max_cols = rows if grid_size == -1 else grid_size
            if grid_size == -1:
                max_cols = cols
        else:
            max_rows, max_cols = grid_size
        row_step, col_step = max(1, _cdiv(rows, max_rows)), max(1, _cdiv(cols, max_cols))
        pictures = []
        for n, idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if n == limit:
                pictures.append("...")
                pictures.append("To print out more, set BlockMask.to_string(limit=N)")
                pictures.append("You can also index (BlockMask[batch, head]) to choose a specific batch or head")
                break
            grid = dense[idx]
            text = f"{idx}\n"
            for r in range(0, rows, row_step):
                for c in range(0, cols, col_step):
                    mean = grid[r : r + row_step, c : c + col_step].mean()
                    text += ("█" if mean == 1 else " " if mean == 0 else "░") * 2
                text += "\n"
            pictures.append(text)
        return "\n".join(pictures)

    def __str__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n{self.to_string().strip()}\n)"

    def __repr__(self) -> str:
        def shape(x):
            return None if x is None else x.shape

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (
            "BlockMask(\n"
            f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
            f"    kv_indices={self.kv_indices.shape},\n"
            f"    full_kv_num_blocks={shape(self.full_kv_num_blocks)},\n"
            f"    full_kv_indices={shape(self.full_kv_indices)},\n"
            f"    q_num_blocks={shape(self.q_num_blocks)},\n"
            f"    q_indices={shape(self.q_indices)},\n"
            f"    full_q_num_blocks={shape(self.full_q_num_blocks)},\n"
            f"    full_q_indices={shape(self.full_q_indices)},\n"
            f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
            f"    shape={self.shape},\n"
            f"    sparsity={self.sparsity():.2f}%,\n"
            f"    mask_mod={name}\n"
            ")"
        )

    def __getitem__(self, index) -> BlockMask:
        """The BlockMask of the chosen batches/heads/query blocks; an int index keeps its dimension."""
        index = index if isinstance(index, tuple) else (index,)
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        index = tuple(
            (slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1)) if isinstance(i, int) else i
            for i, n in zip(padded, sizes, strict=False)
        )

        def pick(t):
            return None if t is None else t[index]

        return BlockMask.from_kv_blocks(
            pick(self.kv_num_blocks),
            pick(self.kv_indices),
            pick(self.full_kv_num_blocks),
            pick(self.full_kv_indices),
            BLOCK_SIZE=self.BLOCK_SIZE,
            mask_mod=None,
            seq_lengths=self.seq_lengths,
        )

    def to(self, device) -> BlockMask:
        if str(device) != "cpu":
            raise NotImplementedError(f"BlockMask.to: only the CPU is supported here, got {device}")
        return self


def _transpose_ordered(num: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dense = _ordered_to_dense(num, indices, indices.shape[-1])
    return _dense_to_ordered(np.swapaxes(dense, -2, -1))


def create_block_mask(
    mask_mod: Callable,
    B: int | None,
    H: int | None,
    Q_LEN: int,
    KV_LEN: int,
    device="cpu",
    BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_BLOCK,
    _compile: bool = False,
) -> BlockMask:
    """The BlockMask of ``mask_mod`` over (B, H, Q_LEN, KV_LEN); ``None`` for B or H broadcasts over it."""
    if _arity(mask_mod) != 4:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    if str(device) not in ("cpu", "None"):
        raise NotImplementedError(f"create_block_mask: only the CPU is supported here, got device {device}")
    B, H = B or 1, H or 1
    bq, bk = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    status = _block_status(mask_mod, B, H, Q_LEN, KV_LEN, bq, bk)
    status = np.broadcast_to(status, (B, H, *status.shape[2:]))
    partial, full = (status == 1), (status == 2)
    kv_num, kv_idx = _dense_to_ordered(partial)
    full_num, full_idx = _dense_to_ordered(full)
    q_num, q_idx = _dense_to_ordered(np.swapaxes(partial, -2, -1))
    full_q_num, full_q_idx = _dense_to_ordered(np.swapaxes(full, -2, -1))
    return BlockMask(
        (Q_LEN, KV_LEN),
        *(_t(a) for a in (kv_num, kv_idx, full_num, full_idx, q_num, q_idx, full_q_num, full_q_idx)),
        (bq, bk),
        mask_mod,
    )
