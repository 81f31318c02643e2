"""The C++ FlexAttention forward, generated for one problem: sizes, dtype, tiles, and the mods' code.

One kernel computes ``softmax(score_mod(Q Kᵀ · scale), masked) V`` for every (batch, query head, query
tile), the tasks spread over the kernels' thread pool (``runtime/parallel.py``). A task walks the key
tiles of its query tile in order and skips the ones the BlockMask's status calls empty; for each key
tile it

1. copies the tile of K transposed (so the scores' inner loop runs over contiguous keys),
2. computes the scores of its rows against the tile's keys, the queries pre-scaled as eager does,
3. runs the score_mod, and the mask_mod on partial tiles only (full tiles skip it), both inlined as
   scalar C++ (``lowering_flex`` writes them through the ``ops`` handler, as pointwise kernels are),
   a masked score becoming -inf,
4. updates each row's running max, sum of exponentials and output accumulator (online softmax).

At the end a row is divided by its sum; the log-sum-exp (natural log) and the row max are written too.
A row with every key masked gets zeros, ``lse = -inf`` and ``max = -inf``, as eager's. float32 is
computed in float32 and float64 in float64, as eager's tiles.

Tensors the mods capture (an ALiBi slope per head, a relative-position bias table) are inputs of the
kernel read at the index the mod computes; an index out of range makes the kernel return 1, and
the caller raises ``IndexError`` (eager raises one too), never a read out of bounds.

The kernel takes ``(void** args)``: q, k, v (contiguous), the block status (int8) if there is a
BlockMask, the captured tensors, then the outputs (out, lse, max).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.creation import from_numpy
from ember.core.devices import CPU
from ember.core.tensor import Tensor, empty
from ember.inductor import cpp_builder
from ember.inductor.cpp_ops import PRELUDE
from ember.inductor.pointers import pointer_array
from ember.inductor.runtime.parallel import KERNEL_PRELUDE

_CTYPE = {D.float32: "float", D.float64: "double"}


@dataclass(frozen=True)
class FlexProblem:
    dtype: Any
    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    v_dim: int
    q_tile: int
    kv_tile: int
    scale: float
    # the block status's (Bm, Hm, nq, nkv), or None: every tile is full
    status_shape: tuple[int, int, int, int] | None

    @property
    def out_size(self) -> tuple[int, int, int, int]:
        return (self.batch, self.heads, self.q_len, self.v_dim)

    def describe(self) -> str:
        return (
            f"B={self.batch} Hq={self.heads} Hkv={self.kv_heads} L={self.q_len} S={self.kv_len} E={self.head_dim} "
            f"Ev={self.v_dim} {self.dtype} tiles {self.q_tile}x{self.kv_tile}"
        )


@dataclass(frozen=True)
class ModCode:
    """A mod written as C++ lines that set ``result`` from the variables ``fx_s`` (the score, for a
    score_mod), ``fx_b``, ``fx_h``, ``fx_q``, ``fx_kv`` (int32); ``captured`` are the tensors it reads,
    by the pointer names ``names``."""

    lines: tuple[str, ...]
    result: str
    captured: tuple[Tensor, ...] = ()
    names: tuple[str, ...] = ()


HELPERS = r"""
static std::atomic<int> ember_flex_bad_index{0};
// A captured tensor's index as Python's: negatives count from the end; out of range is flagged.
static inline int64_t ember_flex_index(int64_t v, int64_t n) {
  if (v < 0) v += n;
  if (v < 0 || v >= n) { ember_flex_bad_index.store(1, std::memory_order_relaxed); return 0; }
  return v;
}
"""


# Rows of a register block; columns of one: a 64-byte line of the compute type.
RB = 4


def _up(n: int, m: int) -> int:
    return -(-n // m) * m


def flex_source(name: str, p: FlexProblem, score: ModCode | None, mask: ModCode | None) -> str:
    t = _CTYPE[p.dtype]
    cw = 64 // (4 if t == "float" else 8)
    nq, nk = -(-p.q_len // p.q_tile), -(-p.kv_len // p.kv_tile)
    captured = [(n, c) for mod in (score, mask) if mod is not None for n, c in zip(mod.names, mod.captured,
                strict=True)]  # fmt: skip
    args = ["  const T* q = static_cast<const T*>(args[0]);",
            "  const T* k = static_cast<const T*>(args[1]);",
            "  const T* v = static_cast<const T*>(args[2]);"]  # fmt: skip
    pos = 3
    if p.status_shape is not None:
        args.append("  const int8_t* status = static_cast<const int8_t*>(args[3]);")
        pos += 1
    for cname, tensor in captured:
        ct = cpp_ops_storage(tensor.dtype)
        args.append(f"  const {ct}* {cname} = static_cast<const {ct}*>(args[{pos}]);")
        pos += 1
    args += [f"  T* out = static_cast<T*>(args[{pos}]);", f"  T* lse = static_cast<T*>(args[{pos + 1}]);",
             f"  T* mx = static_cast<T*>(args[{pos + 2}]);"]  # fmt: skip
    if p.status_shape is not None:
        bm, hm, sq, sk = p.status_shape
        status = (
            f"const int st = status[(({'0' if bm == 1 else 'b'} * {hm} + {'0' if hm == 1 else 'h'}) * {sq} + i) "
            f"* {sk} + j];\n        if (st == 0) continue;"
        )
    else:
        status = "const int st = 2;"
    score_lines = "\n".join(f"            {line}" for line in score.lines) if score else ""
    score_value = "T(sm_out)" if score else "fx_s"
    if score:
        score_lines += f"\n            const auto sm_out = {score.result};"
    if mask:
        mask_block = "\n".join(
            ["            if (st == 1) {", *[f"              {line}" for line in mask.lines],
             f"              if (!bool({mask.result})) val = NEG_INF;", "            }"]
        )  # fmt: skip
    else:
        mask_block = ""
    return f"""{PRELUDE}
#include <algorithm>
#include <atomic>
{KERNEL_PRELUDE}
{HELPERS}
// FlexAttention forward: {p.describe()}
extern "C" int {name}(void** args) {{
  using T = {t};
  constexpr int64_t B = {p.batch}, HQ = {p.heads}, G = {p.heads // p.kv_heads}, HKV = {p.kv_heads};
  constexpr int64_t L = {p.q_len}, S = {p.kv_len}, E = {p.head_dim}, EV = {p.v_dim};
  constexpr int64_t TQ = {p.q_tile}, TK = {p.kv_tile}, NQ = {nq}, NK = {nk};
  constexpr int64_t RB = {RB}, CW = {cw}, TQP = {_up(p.q_tile, RB)}, TKP = {_up(p.kv_tile, cw)}, EVP = {_up(p.v_dim, cw)};
  const T scale = T({p.scale!r});
  const T NEG_INF = -std::numeric_limits<T>::infinity();
{chr(10).join(args)}
  ember_flex_bad_index.store(0);
  auto run = [&](int64_t begin, int64_t end) {{
    // tiles padded to whole row blocks (RB) and vector widths (CW); padding is never read back
    std::vector<T> qs(TQP * E, T(0)), kt(E * TKP, T(0)), vt(TKP * EVP, T(0)), s(TQP * TKP, T(0));
    std::vector<T> acc(TQP * EVP), m(TQP), l(TQP);
    for (int64_t task = begin; task < end; ++task) {{
      const int64_t i = task % NQ, h = (task / NQ) % HQ, b = task / (NQ * HQ), hk = h / G;
      const int64_t q0 = i * TQ, nr = std::min<int64_t>(L, q0 + TQ) - q0;
      const T* qb = q + ((b * HQ + h) * L + q0) * E;
      const T* kb = k + (b * HKV + hk) * S * E;
      const T* vb = v + (b * HKV + hk) * S * EV;
      for (int64_t x = 0; x < nr * E; ++x) qs[x] = qb[x] * scale;
      std::fill(m.begin(), m.end(), NEG_INF);
      std::fill(l.begin(), l.end(), T(0));
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t j = 0; j < NK; ++j) {{
        {status}
        const int64_t k0 = j * TK, nc = std::min<int64_t>(S, k0 + TK) - k0;
        for (int64_t c = 0; c < nc; ++c) {{
          for (int64_t e = 0; e < E; ++e) kt[e * TKP + c] = kb[(k0 + c) * E + e];
          for (int64_t e = 0; e < EV; ++e) vt[c * EVP + e] = vb[(k0 + c) * EV + e];
        }}
        // scores: RB rows by CW keys at a time, in registers
        for (int64_t r0 = 0; r0 < nr; r0 += RB) {{
          for (int64_t c0 = 0; c0 < nc; c0 += CW) {{
            T a[RB][CW] = {{}};
            for (int64_t e = 0; e < E; ++e) {{
              const T* kr = &kt[e * TKP + c0];
              for (int64_t x = 0; x < RB; ++x) {{
                const T qv = qs[(r0 + x) * E + e];
                #pragma omp simd
                for (int64_t y = 0; y < CW; ++y) a[x][y] += qv * kr[y];
              }}
            }}
            for (int64_t x = 0; x < RB; ++x)
              for (int64_t y = 0; y < CW; ++y) s[(r0 + x) * TKP + c0 + y] = a[x][y];
          }}
        }}
        // the mods, and the online softmax's rescaling, row by row
        for (int64_t r = 0; r < nr; ++r) {{
          T* sr = &s[r * TKP];
          const int32_t fx_b = int32_t(b), fx_h = int32_t(h), fx_q = int32_t(q0 + r);
          (void)fx_b; (void)fx_h; (void)fx_q;
          for (int64_t c = 0; c < nc; ++c) {{
            const int32_t fx_kv = int32_t(k0 + c);
            (void)fx_kv;
            const T fx_s = sr[c];
{score_lines}
            T val = {score_value};
{mask_block}
            sr[c] = val;
          }}
          // the max in a loop of its own: in the mods' loop GCC kept it in memory, a store and a load
          // on every score's critical path (nearly half the kernel's time)
          T row_max = m[r];
          #pragma omp simd reduction(max:row_max)
          for (int64_t c = 0; c < nc; ++c) row_max = sr[c] > row_max ? sr[c] : row_max;
          const T safe = row_max == NEG_INF ? T(0) : row_max;
          const T alpha = std::exp(m[r] - safe);
          T sum = 0;
          #pragma omp simd reduction(+:sum)
          for (int64_t c = 0; c < nc; ++c) {{ const T pv = std::exp(sr[c] - safe); sr[c] = pv; sum += pv; }}
          l[r] = l[r] * alpha + sum;
          T* ar = &acc[r * EVP];
          #pragma omp simd
          for (int64_t e = 0; e < EVP; ++e) ar[e] *= alpha;
          m[r] = row_max;
        }}
        // acc += P V: RB rows by CW output columns at a time, in registers
        for (int64_t r0 = 0; r0 < nr; r0 += RB) {{
          for (int64_t e0 = 0; e0 < EVP; e0 += CW) {{
            T a[RB][CW];
            for (int64_t x = 0; x < RB; ++x)
              for (int64_t y = 0; y < CW; ++y) a[x][y] = acc[(r0 + x) * EVP + e0 + y];
            for (int64_t c = 0; c < nc; ++c) {{
              const T* vr = &vt[c * EVP + e0];
              for (int64_t x = 0; x < RB; ++x) {{
                const T pv = s[(r0 + x) * TKP + c];
                #pragma omp simd
                for (int64_t y = 0; y < CW; ++y) a[x][y] += pv * vr[y];
              }}
            }}
            for (int64_t x = 0; x < RB; ++x)
              for (int64_t y = 0; y < CW; ++y) acc[(r0 + x) * EVP + e0 + y] = a[x][y];
          }}
        }}
      }}
      for (int64_t r = 0; r < nr; ++r) {{
        const int64_t row = (b * HQ + h) * L + q0 + r;
        const bool empty = l[r] == T(0);
        const T inv = empty ? T(0) : T(1) / l[r];
        for (int64_t e = 0; e < EV; ++e) out[row * EV + e] = empty ? T(0) : acc[r * EVP + e] * inv;
        lse[row] = empty ? NEG_INF : m[r] + std::log(l[r]);
        mx[row] = m[r];
      }}
    }}
  }};
  ember_parallel(0, B * HQ * NQ, 1, run);
  return ember_flex_bad_index.load() ? 1 : 0;
}}
"""


def cpp_ops_storage(dtype: Any) -> str:
    from ember.inductor.cpp_ops import storage_ctype

    return storage_ctype(dtype)


class FlexKernel:
    """A compiled FlexAttention forward called like an eager op: ``kernel(q, k, v) -> (out, lse, max)``.

    It holds what the graph does not carry as tensors: the block status and the captured tensors."""

    def __init__(
        self,
        name: str,
        problem: FlexProblem,
        score: ModCode | None,
        mask: ModCode | None,
        status: np.ndarray | None,
    ) -> None:
        self.name, self.problem = name, problem
        self.source = flex_source(name, problem, score, mask)
        self.status = None if status is None else from_numpy(np.ascontiguousarray(status, dtype=np.int8))
        self.captured = tuple(t.detach() for mod in (score, mask) if mod is not None for t in mod.captured)
        self.fn: Any = None

    def load(self) -> FlexKernel:
        fn = getattr(cpp_builder.load(self.source), self.name)
        fn.argtypes = (ctypes.c_void_p,)
        fn.restype = ctypes.c_int
        self.fn = fn
        return self

    def __call__(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        p = self.problem
        if self.fn is None:
            self.load()
        q, k, v = (t.contiguous() for t in (query, key, value))
        want = ((p.batch, p.heads, p.q_len, p.head_dim), (p.batch, p.kv_heads, p.kv_len, p.head_dim),
                (p.batch, p.kv_heads, p.kv_len, p.v_dim))  # fmt: skip
        for name, t, shape in zip(("query", "key", "value"), (q, k, v), want, strict=True):
            if tuple(t.shape) != shape or t.dtype is not p.dtype:
                raise RuntimeError(
                    f"FlexAttention kernel {self.name} was generated for a {name} of shape {shape} and dtype "
                    f"{p.dtype}, got {tuple(t.shape)} {t.dtype}: recompile for these inputs"
                )
        out = empty(p.out_size, p.dtype, CPU)
        lse = empty(p.out_size[:3], p.dtype, CPU)
        mx = empty(p.out_size[:3], p.dtype, CPU)
        tensors = [q, k, v, *([self.status] if self.status is not None else []), *self.captured, out, lse, mx]
        ptrs = pointer_array(tensors)
        if self.fn(ptrs) != 0:
            raise IndexError("flex_attention: a score_mod or mask_mod indexed a captured tensor out of its range")
        return out, lse, mx

    def __repr__(self) -> str:
        return self.name


__all__ = ["FlexKernel", "FlexProblem", "ModCode", "flex_source"]
