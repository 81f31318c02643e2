"""The Triton kernels of FlashAttention-2 (Dao, arXiv 2307.08691); imported only when Triton is present.

Forward: one program per (query block, query head, batch) walks the key blocks with the online softmax
(running max ``m``, running sum ``l``, rescaled accumulator), in base 2 (``exp2`` with the scale folded
into ``log2 e``), and stores ``lse`` (natural log) for the backward pass. Causal programs stop at the
diagonal; fully masked rows keep ``m = -inf`` and finish as zeros with ``lse = +inf``. Every loop runs in
two parts: whole blocks off the diagonal, compiled without bounds or causal tests, then edge blocks.

Backward, without atomics (each output block has one writer, so autotuning may rerun any kernel):
``_bwd_preprocess`` computes ``delta = rowsum(dO * O)``; ``_bwd_dkdv`` owns a key block of one key/value
head and loops over the query heads of its group and their query blocks, recomputing ``P = exp(S - lse)``,
so grouped-query heads are summed in registers without races; ``_bwd_dq`` owns a query block and loops
over key blocks. Dropout redraws the same Philox bits in every kernel from the element's global index.

``MASK_KIND``: 0 none, 1 boolean (keep where nonzero), 2 additive float; the mask is read through its
strides, so a broadcast mask (stride 0) costs no memory. Head dims are padded to ``BLOCK_D`` (a power
of two, at least 16) with masked loads.
"""

from __future__ import annotations

import triton
import triton.language as tl

INTERPRET = bool(triton.knobs.runtime.interpret)

LOG2E = 1.4426950408889634
# Kernels may read only constexpr globals.
_LOG2E = tl.constexpr(LOG2E)
_LN2 = tl.constexpr(0.6931471805599453)
AUTOTUNE_KEY = ["HEAD_DIM", "IS_CAUSAL", "MASK_KIND", "HAS_DROPOUT"]


def _configs(shapes: list[tuple[int, int, int, int]]) -> list[triton.Config]:
    """(BLOCK_M, BLOCK_N, warps, stages) to try on a GPU; the interpreter runs one small block."""
    if INTERPRET:
        return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=1, num_stages=1)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s) for m, n, w, s in shapes]


def _prune_for_head_dim(configs, named_args, **kwargs):
    """Large tiles with head dim 256 spill registers and overflow shared memory: keep the smaller ones."""
    if {**named_args, **kwargs}.get("HEAD_DIM", 0) <= 128:
        return configs
    small = [c for c in configs if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] <= 64 * 64]
    return small or configs


FWD_CONFIGS = _configs(
    [(128, 64, 4, 3), (128, 128, 8, 3), (128, 32, 4, 4), (64, 64, 4, 3), (64, 32, 4, 3), (64, 64, 4, 2)]
)
DKDV_CONFIGS = _configs([(32, 128, 4, 3), (64, 128, 8, 3), (32, 64, 4, 3), (64, 64, 4, 2), (32, 32, 4, 2)])
DQ_CONFIGS = _configs([(128, 32, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (64, 32, 4, 2), (32, 32, 4, 2)])
PREPROCESS_BLOCK_M = 16 if INTERPRET else 64


@triton.jit
def _scores_log2(
    s,
    offs_m,
    offs_n,
    Sq,
    Skv,
    mask_base,
    smm,
    smn,
    IS_CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr,
    TRANSPOSED: tl.constexpr,
    EDGE: tl.constexpr,
):
    """Masked scores in base 2: ``s`` is (M, N), or (N, M) when TRANSPOSED; masked-out entries are -inf.

    Only EDGE blocks (the last partial key block, blocks crossing the causal diagonal) test bounds and
    causality; the callers arrange that the other blocks need neither."""
    if TRANSPOSED:
        rows = offs_m[None, :]
        cols = offs_n[:, None]
    else:
        rows = offs_m[:, None]
        cols = offs_n[None, :]
    if MASK_KIND != 0:
        inside = (rows < Sq) & (cols < Skv)
        if MASK_KIND == 1:
            flag = tl.load(mask_base + rows * smm + cols * smn, mask=inside, other=0)
            s = tl.where(flag != 0, s, float("-inf"))
        else:
            bias = tl.load(mask_base + rows * smm + cols * smn, mask=inside, other=0.0)
            s = s + bias.to(tl.float32) * _LOG2E
    if EDGE:
        keep = (rows < Sq) & (cols < Skv)
        if IS_CAUSAL:
            keep = keep & (cols <= rows)
        s = tl.where(keep, s, float("-inf"))
    return s


@triton.jit
def _dot(a, b, DOT_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    """``a @ b`` with float32 accumulation. UPCAST_DOT works around the interpreter, whose dot multiplies
    the raw bits of bfloat16 operands; bfloat16 products are exact in float32, so the result is the same."""
    if UPCAST_DOT:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    return tl.dot(a, b, input_precision=DOT_PRECISION)


@triton.jit
def _dropout_keep(seed, rng_offset, dropout_p, row_base, offs_m, offs_n, Skv, TRANSPOSED: tl.constexpr):
    """Philox keep-flags for element (row_base + i) * Skv + j: the reference's rule, in int64."""
    if TRANSPOSED:
        index = (row_base + offs_m[None, :].to(tl.int64)) * Skv + offs_n[:, None]
    else:
        index = (row_base + offs_m[:, None].to(tl.int64)) * Skv + offs_n[None, :]
    return tl.rand(seed, rng_offset + index) >= dropout_p


@triton.jit
def _fwd_blocks(
    acc, l_i, m_i, q, k_base, v_base, mask_base, offs_m, offs_d, d_ok, skn, skd, svn, svd, smm, smn,
    Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, lo, hi,
    IS_CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr, HAS_DROPOUT: tl.constexpr, DOT_PRECISION: tl.constexpr,
    UPCAST_DOT: tl.constexpr, BLOCK_N: tl.constexpr, EDGE: tl.constexpr,
):  # fmt: skip
    """The online softmax over key blocks [lo, hi): rescale by the new running max, accumulate P V."""
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = (offs_n[:, None] < Skv) & d_ok[None, :]
        kt = tl.load(
            k_base + offs_n[None, :] * skn + offs_d[:, None] * skd,
            mask=(offs_n[None, :] < Skv) & d_ok[:, None],
            other=0.0,
        )
        s = _dot(q, kt, DOT_PRECISION, UPCAST_DOT) * scale_log2
        s = _scores_log2(s, offs_m, offs_n, Sq, Skv, mask_base, smm, smn, IS_CAUSAL, MASK_KIND, False, EDGE)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # A row with nothing kept yet has m = -inf; shifting by 0 instead keeps exp2 away from NaN.
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        if HAS_DROPOUT:
            keep = _dropout_keep(seed, rng_offset, dropout_p, row_base, offs_m, offs_n, Skv, False)
            p = tl.where(keep, p, 0.0)
        v = tl.load(v_base + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=kv_ok, other=0.0)
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, DOT_PRECISION, UPCAST_DOT)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=FWD_CONFIGS, key=AUTOTUNE_KEY, prune_configs_by={"early_config_prune": _prune_for_head_dim})
@triton.jit(do_not_specialize=["seed", "rng_offset"])
def _fwd(
    Q,
    K,
    V,
    Out,
    Lse,
    Mask,
    sqb,
    sqh,
    sqm,
    sqd,
    skb,
    skh,
    skn,
    skd,
    svb,
    svh,
    svn,
    svd,
    sob,
    soh,
    som,
    sod,
    slb,
    slh,
    slm,
    smb,
    smh,
    smm,
    smn,
    Hq,
    Sq,
    Skv,
    GROUP,
    scale_log2,
    dropout_p,
    seed,
    rng_offset,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    IS_CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr,
    HAS_DROPOUT: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < Sq
    d_ok = offs_d < HEAD_DIM
    q = tl.load(
        Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
        mask=row_ok[:, None] & d_ok[None, :],
        other=0.0,
    )
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    mask_base = Mask + b * smb + h * smh
    row_base = (b * Hq + h) * Sq

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    # Key blocks before `full` are whole and, when causal, left of every row of this block.
    full = (Skv // BLOCK_N) * BLOCK_N
    hi = Skv
    if IS_CAUSAL:
        full = tl.minimum(full, (start_m * BLOCK_M // BLOCK_N) * BLOCK_N)
        hi = tl.minimum(Skv, (start_m + 1) * BLOCK_M)
    acc, l_i, m_i = _fwd_blocks(
        acc, l_i, m_i, q, k_base, v_base, mask_base, offs_m, offs_d, d_ok, skn, skd, svn, svd, smm, smn,
        Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, 0, full,
        IS_CAUSAL, MASK_KIND, HAS_DROPOUT, DOT_PRECISION, UPCAST_DOT, BLOCK_N, False,
    )  # fmt: skip
    acc, l_i, m_i = _fwd_blocks(
        acc, l_i, m_i, q, k_base, v_base, mask_base, offs_m, offs_d, d_ok, skn, skd, svn, svd, smm, smn,
        Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, full, hi,
        IS_CAUSAL, MASK_KIND, HAS_DROPOUT, DOT_PRECISION, UPCAST_DOT, BLOCK_N, True,
    )  # fmt: skip

    empty = m_i == float("-inf")
    l_safe = tl.where(empty, 1.0, l_i)
    out = acc / l_safe[:, None]
    if HAS_DROPOUT:
        out = out * (1.0 / (1.0 - dropout_p))
    out = tl.where(empty[:, None], 0.0, out)
    lse = tl.where(empty, float("inf"), (m_i + tl.log2(l_safe)) * _LN2)
    tl.store(
        Out + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod,
        out.to(Out.dtype.element_ty),
        mask=row_ok[:, None] & d_ok[None, :],
    )
    tl.store(Lse + b * slb + h * slh + offs_m * slm, lse, mask=row_ok)


@triton.jit
def _bwd_preprocess(
    Out,
    DO,
    Delta,
    sob,
    soh,
    som,
    sod,
    sdob,
    sdoh,
    sdom,
    sdod,
    Hq,
    Sq,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    start_m = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    inside = (offs_m[:, None] < Sq) & (offs_d[None, :] < HEAD_DIM)
    o = tl.load(Out + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod, mask=inside, other=0.0)
    do = tl.load(DO + b * sdob + h * sdoh + offs_m[:, None] * sdom + offs_d[None, :] * sdod, mask=inside, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    tl.store(Delta + (b * Hq + h) * Sq + offs_m, delta, mask=offs_m < Sq)


@triton.jit
def _dkdv_blocks(
    dk, dv, k, v, q_base, do_base, mask_base, lse_base, delta_base, offs_n, offs_d, d_ok,
    sqm, sqd, sdom, sdod, slm, smm, smn, Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, lo, hi,
    IS_CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr, HAS_DROPOUT: tl.constexpr, DOT_PRECISION: tl.constexpr,
    UPCAST_DOT: tl.constexpr, BLOCK_M: tl.constexpr, EDGE: tl.constexpr,
):  # fmt: skip
    """dK and dV of one key block from query blocks [lo, hi) of one query head, in transposed form.

    Keys past the end need no test here: they only touch rows of dK/dV that are never stored."""
    inv_keep = 1.0 / (1.0 - dropout_p)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        row_ok = offs_m < Sq
        q_inside = row_ok[:, None] & d_ok[None, :]
        q = tl.load(q_base + offs_m[:, None] * sqm + offs_d[None, :] * sqd, mask=q_inside, other=0.0)
        do = tl.load(do_base + offs_m[:, None] * sdom + offs_d[None, :] * sdod, mask=q_inside, other=0.0)
        # Rows past the end read lse = +inf, so their probabilities are exactly 0.
        lse = tl.load(lse_base + offs_m * slm, mask=row_ok, other=float("inf"))
        delta = tl.load(delta_base + offs_m, mask=row_ok, other=0.0)
        st = _dot(k, tl.trans(q), DOT_PRECISION, UPCAST_DOT) * scale_log2
        st = _scores_log2(st, offs_m, offs_n, Sq, Skv, mask_base, smm, smn, IS_CAUSAL, MASK_KIND, True, EDGE)
        pt = tl.exp2(st - lse[None, :] * _LOG2E)
        dpt = _dot(v, tl.trans(do), DOT_PRECISION, UPCAST_DOT)
        if HAS_DROPOUT:
            keep = _dropout_keep(seed, rng_offset, dropout_p, row_base, offs_m, offs_n, Skv, True)
            pt_drop = tl.where(keep, pt * inv_keep, 0.0)
            dpt = tl.where(keep, dpt * inv_keep, 0.0)
        else:
            pt_drop = pt
        dv += _dot(pt_drop.to(do.dtype), do, DOT_PRECISION, UPCAST_DOT)
        dst = pt * (dpt - delta[None, :])
        dk += _dot(dst.to(q.dtype), q, DOT_PRECISION, UPCAST_DOT)
    return dk, dv


@triton.autotune(configs=DKDV_CONFIGS, key=AUTOTUNE_KEY, prune_configs_by={"early_config_prune": _prune_for_head_dim})
@triton.jit(do_not_specialize=["seed", "rng_offset"])
def _bwd_dkdv(
    Q,
    K,
    V,
    DO,
    Lse,
    Delta,
    DK,
    DV,
    Mask,
    sqb,
    sqh,
    sqm,
    sqd,
    skb,
    skh,
    skn,
    skd,
    svb,
    svh,
    svn,
    svd,
    sdob,
    sdoh,
    sdom,
    sdod,
    slb,
    slh,
    slm,
    sdkb,
    sdkh,
    sdkn,
    sdkd,
    sdvb,
    sdvh,
    sdvn,
    sdvd,
    smb,
    smh,
    smm,
    smn,
    Hq,
    Sq,
    Skv,
    GROUP,
    scale,
    scale_log2,
    dropout_p,
    seed,
    rng_offset,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    IS_CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr,
    HAS_DROPOUT: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_n = tl.program_id(0)
    hk = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    col_ok = offs_n < Skv
    d_ok = offs_d < HEAD_DIM
    kv_inside = col_ok[:, None] & d_ok[None, :]
    k = tl.load(K + b * skb + hk * skh + offs_n[:, None] * skn + offs_d[None, :] * skd, mask=kv_inside, other=0.0)
    v = tl.load(V + b * svb + hk * svh + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=kv_inside, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    lo = 0
    diag = 0
    if IS_CAUSAL:
        # Query rows above this block's first key see none of it.
        lo = (start_n * BLOCK_N // BLOCK_M) * BLOCK_M
        last_key = start_n * BLOCK_N + BLOCK_N - 1
        diag = tl.maximum(lo, tl.minimum(Sq, (last_key + BLOCK_M - 1) // BLOCK_M * BLOCK_M))
    for g in range(0, GROUP):
        h = hk * GROUP + g
        q_base = Q + b * sqb + h * sqh
        do_base = DO + b * sdob + h * sdoh
        mask_base = Mask + b * smb + h * smh
        row_base = (b * Hq + h) * Sq
        # Query blocks from `diag` on lie below the diagonal: every row sees every key of this block.
        dk, dv = _dkdv_blocks(
            dk, dv, k, v, q_base, do_base, mask_base, Lse + b * slb + h * slh, Delta + row_base, offs_n, offs_d, d_ok,
            sqm, sqd, sdom, sdod, slm, smm, smn, Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, lo, diag,
            IS_CAUSAL, MASK_KIND, HAS_DROPOUT, DOT_PRECISION, UPCAST_DOT, BLOCK_M, True,
        )  # fmt: skip
        dk, dv = _dkdv_blocks(
            dk, dv, k, v, q_base, do_base, mask_base, Lse + b * slb + h * slh, Delta + row_base, offs_n, offs_d, d_ok,
            sqm, sqd, sdom, sdod, slm, smm, smn, Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, diag, Sq,
            IS_CAUSAL, MASK_KIND, HAS_DROPOUT, DOT_PRECISION, UPCAST_DOT, BLOCK_M, False,
        )  # fmt: skip
    dk = dk * scale
    tl.store(
        DK + b * sdkb + hk * sdkh + offs_n[:, None] * sdkn + offs_d[None, :] * sdkd,
        dk.to(DK.dtype.element_ty),
        mask=kv_inside,
    )
    tl.store(
        DV + b * sdvb + hk * sdvh + offs_n[:, None] * sdvn + offs_d[None, :] * sdvd,
        dv.to(DV.dtype.element_ty),
        mask=kv_inside,
    )


@triton.jit
def _dq_blocks(
    dq, q, do, lse, delta, k_base, v_base, mask_base, offs_m, offs_d, d_ok, skn, skd, svn, svd, smm, smn,
    Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, lo, hi,
    IS_CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr, HAS_DROPOUT: tl.constexpr, DOT_PRECISION: tl.constexpr,
    UPCAST_DOT: tl.constexpr, BLOCK_N: tl.constexpr, EDGE: tl.constexpr,
):  # fmt: skip
    """dQ of one query block from key blocks [lo, hi)."""
    inv_keep = 1.0 / (1.0 - dropout_p)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < Skv
        kv_inside = col_ok[:, None] & d_ok[None, :]
        k = tl.load(k_base + offs_n[:, None] * skn + offs_d[None, :] * skd, mask=kv_inside, other=0.0)
        v = tl.load(v_base + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=kv_inside, other=0.0)
        s = _dot(q, tl.trans(k), DOT_PRECISION, UPCAST_DOT) * scale_log2
        s = _scores_log2(s, offs_m, offs_n, Sq, Skv, mask_base, smm, smn, IS_CAUSAL, MASK_KIND, False, EDGE)
        p = tl.exp2(s - lse[:, None] * _LOG2E)
        dp = _dot(do, tl.trans(v), DOT_PRECISION, UPCAST_DOT)
        if HAS_DROPOUT:
            keep = _dropout_keep(seed, rng_offset, dropout_p, row_base, offs_m, offs_n, Skv, False)
            dp = tl.where(keep, dp * inv_keep, 0.0)
        ds = p * (dp - delta[:, None])
        dq += _dot(ds.to(k.dtype), k, DOT_PRECISION, UPCAST_DOT)
    return dq


@triton.autotune(configs=DQ_CONFIGS, key=AUTOTUNE_KEY, prune_configs_by={"early_config_prune": _prune_for_head_dim})
@triton.jit(do_not_specialize=["seed", "rng_offset"])
def _bwd_dq(
    Q,
    K,
    V,
    DO,
    Lse,
    Delta,
    DQ,
    Mask,
    sqb,
    sqh,
    sqm,
    sqd,
    skb,
    skh,
    skn,
    skd,
    svb,
    svh,
    svn,
    svd,
    sdob,
    sdoh,
    sdom,
    sdod,
    slb,
    slh,
    slm,
    sdqb,
    sdqh,
    sdqm,
    sdqd,
    smb,
    smh,
    smm,
    smn,
    Hq,
    Sq,
    Skv,
    GROUP,
    scale,
    scale_log2,
    dropout_p,
    seed,
    rng_offset,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    IS_CAUSAL: tl.constexpr,
    MASK_KIND: tl.constexpr,
    HAS_DROPOUT: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < Sq
    d_ok = offs_d < HEAD_DIM
    q_inside = row_ok[:, None] & d_ok[None, :]
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd, mask=q_inside, other=0.0)
    do = tl.load(DO + b * sdob + h * sdoh + offs_m[:, None] * sdom + offs_d[None, :] * sdod, mask=q_inside, other=0.0)
    lse = tl.load(Lse + b * slb + h * slh + offs_m * slm, mask=row_ok, other=float("inf"))
    row_base = (b * Hq + h) * Sq
    delta = tl.load(Delta + row_base + offs_m, mask=row_ok, other=0.0)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    mask_base = Mask + b * smb + h * smh
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    # As in the forward pass: key blocks before `full` need no bounds or causal test.
    full = (Skv // BLOCK_N) * BLOCK_N
    hi = Skv
    if IS_CAUSAL:
        full = tl.minimum(full, (start_m * BLOCK_M // BLOCK_N) * BLOCK_N)
        hi = tl.minimum(Skv, (start_m + 1) * BLOCK_M)
    dq = _dq_blocks(
        dq, q, do, lse, delta, k_base, v_base, mask_base, offs_m, offs_d, d_ok, skn, skd, svn, svd, smm, smn,
        Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, 0, full,
        IS_CAUSAL, MASK_KIND, HAS_DROPOUT, DOT_PRECISION, UPCAST_DOT, BLOCK_N, False,
    )  # fmt: skip
    dq = _dq_blocks(
        dq, q, do, lse, delta, k_base, v_base, mask_base, offs_m, offs_d, d_ok, skn, skd, svn, svd, smm, smn,
        Sq, Skv, scale_log2, dropout_p, seed, rng_offset, row_base, full, hi,
        IS_CAUSAL, MASK_KIND, HAS_DROPOUT, DOT_PRECISION, UPCAST_DOT, BLOCK_N, True,
    )  # fmt: skip
    dq = dq * scale
    tl.store(
        DQ + b * sdqb + h * sdqh + offs_m[:, None] * sdqm + offs_d[None, :] * sdqd,
        dq.to(DQ.dtype.element_ty),
        mask=q_inside,
    )
