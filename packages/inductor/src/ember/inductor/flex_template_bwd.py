"""The C++ FlexAttention backward, generated for one problem, with the mods' code and its gradient.

The probabilities of each tile are recomputed from the saved log-sum-exp (nothing of size
Q_LEN x KV_LEN is kept), as the eager backward does. With at least as many (batch, key/value head)
pairs as threads, one parallel pass over them: each walks its key tiles in order, over the query
heads that share them (grouped-query heads) and the query tiles the block status keeps, adding
``dV = Pᵀ dO``, ``dK = dS'ᵀ Q · scale`` and ``dQ = dS' K · scale`` (its own heads' rows). With fewer,
two passes with more tasks, each tile computed twice: dQ per (batch, query head, query tile), then
dK and dV per (batch, key/value head, key tile). Both add the same terms in the same order.

For a tile: ``P = exp(score_mod(Q Kᵀ · scale) - lse)`` (0 where masked, and for rows whose every
key was masked), ``dP = dO Vᵀ``, ``dS = P (dP - Δ)`` with ``Δ = rowsum(dO ∘ O) - dlse``, and
``dS'`` is ``dS`` pulled back through the score_mod: the score_mod's derivative with respect to
the score, traced with ``make_fx`` together with the score_mod (``lowering_flex.lower_mod``) and
inlined like the forward's mods. Tasks write only their own rows, so a kernel's result does not
depend on how many threads run it (which form is generated does, to rounding).

The kernel takes ``(void** args)``: q, k, v, out, dO, lse (contiguous), dlse if the graph has it,
the block status (int8) if there is a BlockMask, the tensors the mods capture, then dQ, dK, dV.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ember.core.creation import from_numpy
from ember.core.devices import CPU
from ember.core.tensor import Tensor, empty
from ember.inductor import cpp_builder
from ember.inductor.cpp_ops import PRELUDE, storage_ctype
from ember.inductor.flex_template import _CTYPE, HELPERS, RB, FlexProblem, ModCode, _up
from ember.inductor.pointers import pointer_array
from ember.inductor.runtime.parallel import KERNEL_PRELUDE

# C (M x N, row-major, ldc) = or += A (M x K; or Aᵀ stored K x M when AT) times B (K x N, row-major), in
# register blocks of RB rows by CW columns; M a multiple of RB, N of CW (the buffers are padded).
GEMM = r"""
static inline int64_t ember_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }
template <typename T, int RB, int CW, bool AT>
static inline void ember_gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* Bm, int64_t ldb,
                              T* C, int64_t ldc, bool zero) {
  for (int64_t r0 = 0; r0 < M; r0 += RB)
    for (int64_t c0 = 0; c0 < N; c0 += CW) {
      T a[RB][CW];
      for (int x = 0; x < RB; ++x)
        for (int y = 0; y < CW; ++y) a[x][y] = zero ? T(0) : C[(r0 + x) * ldc + c0 + y];
      for (int64_t kk = 0; kk < K; ++kk) {
        const T* br = Bm + kk * ldb + c0;
        for (int x = 0; x < RB; ++x) {
          const T av = AT ? A[kk * lda + r0 + x] : A[(r0 + x) * lda + kk];
          #pragma omp simd
          for (int y = 0; y < CW; ++y) a[x][y] += av * br[y];
        }
      }
      for (int x = 0; x < RB; ++x)
        for (int y = 0; y < CW; ++y) C[(r0 + x) * ldc + c0 + y] = a[x][y];
    }
}
"""


def _indent(lines: tuple[str, ...], n: int) -> str:
    return "\n".join(" " * n + line for line in lines)


# dQ per query tile, then dK and dV per key tile: parallel over the most tasks, each tile computed twice.
_TWO_PASSES = """
  // pass 1: dQ, per (batch, query head, query tile)
  ember_parallel(0, B * HQ * NQ, 1, [&](int64_t begin, int64_t end) {{
    Work w;
    std::vector<T> acc(TQP * EP);
    for (int64_t task = begin; task < end; ++task) {{
      const int64_t i = task % NQ, h = (task / NQ) % HQ, b = task / (NQ * HQ);
      const int64_t q0 = i * TQ, nr = std::min<int64_t>(L, q0 + TQ) - q0;
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t j = 0; j < NK; ++j) {{
        const int st = {status};
        if (st == 0) continue;
        tile(w, b, h, i, j, st);
        const int64_t nc = std::min<int64_t>(S, j * TK + TK) - j * TK;
        ember_gemm<T, RB, CW, false>(ember_up(nr, RB), EP, nc, w.dst.data(), TKP, w.kr.data(), EP, acc.data(), EP, false);
      }}
      T* out = dq + ((b * HQ + h) * L + q0) * E;
      for (int64_t r = 0; r < nr; ++r)
        for (int64_t e = 0; e < E; ++e) out[r * E + e] = acc[r * EP + e] * scale;
    }}
  }});
  // pass 2: dK and dV, per (batch, key/value head, key tile)
  ember_parallel(0, B * HKV * NK, 1, [&](int64_t begin, int64_t end) {{
    Work w;
    std::vector<T> ak(TKP * EP), av(TKP * EVP);
    for (int64_t task = begin; task < end; ++task) {{
      const int64_t j = task % NK, hk = (task / NK) % HKV, b = task / (NK * HKV);
      const int64_t k0 = j * TK, nc = std::min<int64_t>(S, k0 + TK) - k0, ncr = ember_up(nc, RB);
      std::fill(ak.begin(), ak.end(), T(0));
      std::fill(av.begin(), av.end(), T(0));
      for (int64_t h = hk * G; h < (hk + 1) * G; ++h)
        for (int64_t i = 0; i < NQ; ++i) {{
          const int st = {status};
          if (st == 0) continue;
          tile(w, b, h, i, j, st);
          const int64_t nr = std::min<int64_t>(L, i * TQ + TQ) - i * TQ;
          ember_gemm<T, RB, CW, true>(ncr, EVP, nr, w.pt.data(), TKP, w.dos.data(), EVP, av.data(), EVP, false);
          ember_gemm<T, RB, CW, true>(ncr, EP, nr, w.dst.data(), TKP, w.qs.data(), EP, ak.data(), EP, false);
        }}
      T* outk = dk + ((b * HKV + hk) * S + k0) * E;
      T* outv = dv + ((b * HKV + hk) * S + k0) * EV;
      for (int64_t c = 0; c < nc; ++c) {{
        for (int64_t e = 0; e < E; ++e) outk[c * E + e] = ak[c * EP + e] * scale;
        for (int64_t e = 0; e < EV; ++e) outv[c * EV + e] = av[c * EVP + e];
      }}
    }}
  }});
"""
# One pass per (batch, key/value head), dQ kept by the task: each tile once, B * HKV tasks.
_FUSED = """
  // one pass per (batch, key/value head): its key tiles in order, the dQ of its query heads kept by the task
  ember_parallel(0, B * HKV, 1, [&](int64_t begin, int64_t end) {{
    Work w;
    std::vector<T> ak(TKP * EP), av(TKP * EVP), aq(G * NQ * TQP * EP);
    for (int64_t task = begin; task < end; ++task) {{
      const int64_t hk = task % HKV, b = task / HKV;
      std::fill(aq.begin(), aq.end(), T(0));
      for (int64_t j = 0; j < NK; ++j) {{
        const int64_t k0 = j * TK, nc = std::min<int64_t>(S, k0 + TK) - k0, ncr = ember_up(nc, RB);
        std::fill(ak.begin(), ak.end(), T(0));
        std::fill(av.begin(), av.end(), T(0));
        for (int64_t h = hk * G; h < (hk + 1) * G; ++h)
          for (int64_t i = 0; i < NQ; ++i) {{
            const int st = {status};
            if (st == 0) continue;
            tile(w, b, h, i, j, st);
            const int64_t nr = std::min<int64_t>(L, i * TQ + TQ) - i * TQ;
            T* aqt = &aq[((h - hk * G) * NQ + i) * TQP * EP];
            ember_gemm<T, RB, CW, false>(ember_up(nr, RB), EP, nc, w.dst.data(), TKP, w.kr.data(), EP, aqt, EP, false);
            ember_gemm<T, RB, CW, true>(ncr, EVP, nr, w.pt.data(), TKP, w.dos.data(), EVP, av.data(), EVP, false);
            ember_gemm<T, RB, CW, true>(ncr, EP, nr, w.dst.data(), TKP, w.qs.data(), EP, ak.data(), EP, false);
          }}
        T* outk = dk + ((b * HKV + hk) * S + k0) * E;
        T* outv = dv + ((b * HKV + hk) * S + k0) * EV;
        for (int64_t c = 0; c < nc; ++c) {{
          for (int64_t e = 0; e < E; ++e) outk[c * E + e] = ak[c * EP + e] * scale;
          for (int64_t e = 0; e < EV; ++e) outv[c * EV + e] = av[c * EVP + e];
        }}
      }}
      for (int64_t h = hk * G; h < (hk + 1) * G; ++h)
        for (int64_t i = 0; i < NQ; ++i) {{
          const int64_t nr = std::min<int64_t>(L, i * TQ + TQ) - i * TQ;
          const T* aqt = &aq[((h - hk * G) * NQ + i) * TQP * EP];
          T* out = dq + ((b * HQ + h) * L + i * TQ) * E;
          for (int64_t r = 0; r < nr; ++r)
            for (int64_t e = 0; e < E; ++e) out[r * E + e] = aqt[r * EP + e] * scale;
        }}
    }}
  }});
"""


def flex_backward_source(
    name: str,
    p: FlexProblem,
    score: ModCode | None,
    score_grad: ModCode | None,
    mask: ModCode | None,
    has_grad_lse: bool,
    fused: bool,
) -> str:
    t = _CTYPE[p.dtype]
    cw = 64 // (4 if t == "float" else 8)
    nq, nk = -(-p.q_len // p.q_tile), -(-p.kv_len // p.kv_tile)
    names = ["q", "k", "v", "o", "dO", "lse"]
    args = [f"  const T* {n} = static_cast<const T*>(args[{i}]);" for i, n in enumerate(names)]
    pos = len(names)
    if has_grad_lse:
        args.append(f"  const T* dlse = static_cast<const T*>(args[{pos}]);")
        pos += 1
    if p.status_shape is not None:
        args.append(f"  const int8_t* status = static_cast<const int8_t*>(args[{pos}]);")
        pos += 1
    for mod in (score, score_grad, mask):
        for cname, tensor in zip(mod.names, mod.captured, strict=True) if mod is not None else ():
            ct = storage_ctype(tensor.dtype)
            args.append(f"  const {ct}* {cname} = static_cast<const {ct}*>(args[{pos}]);")
            pos += 1
    args += [f"  T* d{n} = static_cast<T*>(args[{pos + i}]);" for i, n in enumerate(("q", "k", "v"))]
    if p.status_shape is not None:
        bm, hm, sq, sk = p.status_shape
        status = f"status[(({'0' if bm == 1 else 'b'} * {hm} + {'0' if hm == 1 else 'h'}) * {sq} + i) * {sk} + j]"
    else:
        status = "2"
    modded = "fx_s"
    score_code = ""
    if score is not None:
        score_code = _indent(score.lines, 8)
        modded = score.result
    grad_code = "const T dsr = ds;"
    if score_grad is not None:
        grad_code = "\n".join(
            ["const T fx_g = ds;", *score_grad.lines[:], f"const T dsr = T({score_grad.result});"]
        ).replace("\n", "\n        ")
    mask_code = ""
    if mask is not None:
        mask_code = "\n".join(
            ["if (st == 1) {", *[f"  {line}" for line in mask.lines], f"  if (!bool({mask.result})) pv = T(0);", "}"]
        ).replace("\n", "\n        ")
    passes = _FUSED if fused else _TWO_PASSES
    passes = passes.replace("{status}", status).replace("{{", "{").replace("}}", "}")
    return f"""{PRELUDE}
#include <algorithm>
#include <atomic>
{KERNEL_PRELUDE}
{HELPERS}
{GEMM}
// FlexAttention backward: {p.describe()}
extern "C" int {name}(void** args) {{
  using T = {t};
  constexpr int64_t B = {p.batch}, HQ = {p.heads}, G = {p.heads // p.kv_heads}, HKV = {p.kv_heads};
  constexpr int64_t L = {p.q_len}, S = {p.kv_len}, E = {p.head_dim}, EV = {p.v_dim};
  constexpr int64_t TQ = {p.q_tile}, TK = {p.kv_tile}, NQ = {nq}, NK = {nk};
  constexpr int RB = {RB}, CW = {cw};
  constexpr int64_t TQP = {_up(p.q_tile, RB)}, TKP = {_up(p.kv_tile, cw)}, EP = {_up(p.head_dim, cw)};
  constexpr int64_t EVP = {_up(p.v_dim, cw)};
  const T scale = T({p.scale!r});
  const T NEG_INF = -std::numeric_limits<T>::infinity(), POS_INF = std::numeric_limits<T>::infinity();
{chr(10).join(args)}
  ember_flex_bad_index.store(0);
  // P (into pt) and dS pulled back through the score_mod (into dst) of tile (b, h, i, j), status st
  // Per thread: the tiles of Q, dO (rows), K and V (transposed, and K by rows), padded to whole register
  // blocks; P and dS' of the tile. Padding is computed on but never read back.
  struct Work {{
    std::vector<T> qs, dos, kt, vt, kr, pt, dst;
    Work() : qs(TQP * EP, T(0)), dos(TQP * EVP, T(0)), kt(E * TKP, T(0)), vt(EV * TKP, T(0)), kr(TKP * EP, T(0)),
             pt(TQP * TKP, T(0)), dst(TQP * TKP, T(0)) {{}}
  }};
  // P and dS pulled back through the score_mod, of tile (b, h, i, j) whose status is st
  auto tile = [&](Work& w, int64_t b, int64_t h, int64_t i, int64_t j, int st) {{
    const int64_t hk = h / G, q0 = i * TQ, nr = std::min<int64_t>(L, q0 + TQ) - q0;
    const int64_t k0 = j * TK, nc = std::min<int64_t>(S, k0 + TK) - k0;
    const T* kb = k + ((b * HKV + hk) * S + k0) * E;
    const T* vb = v + ((b * HKV + hk) * S + k0) * EV;
    const int64_t row0 = (b * HQ + h) * L + q0;
    for (int64_t r = 0; r < nr; ++r) {{
      for (int64_t e = 0; e < E; ++e) w.qs[r * EP + e] = q[(row0 + r) * E + e];
      for (int64_t e = 0; e < EV; ++e) w.dos[r * EVP + e] = dO[(row0 + r) * EV + e];
    }}
    for (int64_t c = 0; c < nc; ++c) {{
      for (int64_t e = 0; e < E; ++e) {{ w.kt[e * TKP + c] = kb[c * E + e]; w.kr[c * EP + e] = kb[c * E + e]; }}
      for (int64_t e = 0; e < EV; ++e) w.vt[e * TKP + c] = vb[c * EV + e];
    }}
    const int64_t nrp = ember_up(nr, RB), ncp = ember_up(nc, CW);
    ember_gemm<T, RB, CW, false>(nrp, ncp, E, w.qs.data(), EP, w.kt.data(), TKP, w.pt.data(), TKP, true);
    ember_gemm<T, RB, CW, false>(nrp, ncp, EV, w.dos.data(), EVP, w.vt.data(), TKP, w.dst.data(), TKP, true);
    for (int64_t r = 0; r < nr; ++r) {{
      const int64_t row = row0 + r;
      T delta = 0;
      for (int64_t e = 0; e < EV; ++e) delta += dO[row * EV + e] * o[row * EV + e];
      {"delta -= dlse[row];" if has_grad_lse else ""}
      const T lr = lse[row] == NEG_INF ? POS_INF : lse[row];
      const int32_t fx_b = int32_t(b), fx_h = int32_t(h), fx_q = int32_t(q0 + r);
      (void)fx_b; (void)fx_h; (void)fx_q;
      T* ptr = &w.pt[r * TKP];
      T* dsr_row = &w.dst[r * TKP];
      for (int64_t c = 0; c < nc; ++c) {{
        const T fx_s = ptr[c] * scale;
        const T dp = dsr_row[c];
        const int32_t fx_kv = int32_t(k0 + c);
        (void)fx_kv;
{score_code}
        T pv = std::exp(T({modded}) - lr);
        {mask_code}
        const T ds = pv * (dp - delta);
        {grad_code}
        ptr[c] = pv;
        dsr_row[c] = dsr;
      }}
    }}
  }};
{passes}  return ember_flex_bad_index.load() ? 1 : 0;
}}
"""


class FlexBackwardKernel:
    """A compiled FlexAttention backward called like the eager op:
    ``kernel(grad_out, grad_lse_or_None, q, k, v, out, lse) -> (dq, dk, dv)``."""

    def __init__(
        self,
        name: str,
        problem: FlexProblem,
        score: ModCode | None,
        score_grad: ModCode | None,
        mask: ModCode | None,
        status: np.ndarray | None,
        has_grad_lse: bool,
        fused: bool,
    ) -> None:
        self.name, self.problem, self.has_grad_lse, self.fused = name, problem, has_grad_lse, fused
        self.source = flex_backward_source(name, problem, score, score_grad, mask, has_grad_lse, fused)
        self.status = None if status is None else from_numpy(np.ascontiguousarray(status, dtype=np.int8))
        self.captured = tuple(t.detach() for mod in (score, score_grad, mask) if mod is not None for t in mod.captured)
        self.fn: Any = None

    def load(self) -> FlexBackwardKernel:
        fn = getattr(cpp_builder.load(self.source), self.name)
        fn.argtypes = (ctypes.c_void_p,)
        fn.restype = ctypes.c_int
        self.fn = fn
        return self

    def __call__(self, grad_out, grad_lse, query, key, value, out, lse) -> tuple[Tensor, Tensor, Tensor]:
        p = self.problem
        if self.fn is None:
            self.load()
        if (grad_lse is not None) != self.has_grad_lse:
            raise RuntimeError(f"FlexAttention backward kernel {self.name} was generated for another grad_lse")
        ins = [t.contiguous() for t in (query, key, value, out, grad_out, lse)]
        for t in ins:
            if t.dtype is not p.dtype:
                raise RuntimeError(f"FlexAttention backward kernel {self.name} was generated for {p.dtype}")
        if grad_lse is not None:
            ins.append(grad_lse.contiguous())
        grads = [empty(tuple(t.shape), p.dtype, CPU) for t in (query, key, value)]
        tensors = [*ins, *([self.status] if self.status is not None else []), *self.captured, *grads]
        ptrs = pointer_array(tensors)
        if self.fn(ptrs) != 0:
            raise IndexError("flex_attention: a score_mod or mask_mod indexed a captured tensor out of its range")
        return tuple(grads)

    def __repr__(self) -> str:
        return self.name


__all__ = ["FlexBackwardKernel", "flex_backward_source"]
