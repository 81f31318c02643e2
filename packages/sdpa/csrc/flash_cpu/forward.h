// FlashAttention-2 forward (Dao, arXiv 2307.08691, algorithm 1) on the CPU. One task is one
// kBlockQ-row tile of queries of one (batch, query head); every thread that runs a call claims
// tasks one at a time from the call's counter (causal tiles differ in cost). A task streams the
// key/value tiles its rows can see, keeping the running row max m, the running sum l and the
// unnormalized output O in scratch the size of one tile, and rescales O by exp(m_old - m_new) when
// the max grows. Nothing of size Sq x Skv ever exists.
//
// The scores are formed transposed, Sᵀ = K Qᵀ (keys x queries): Qᵀ is packed once per task, the
// key rows are read in place, and the softmax statistics of all queries of the tile move together
// in vectors, with no per-tile transposition and no horizontal reductions.
#pragma once

#include <cmath>
#include <limits>

#include "microkernels.h"
#include "philox.h"
#include "problem.h"

namespace flash {

inline int64_t forward_tasks(const Options& o) { return o.B * o.Hq * ((o.Sq + kBlockQ - 1) / kBlockQ); }

// Runs the tasks this thread claims from `next` until none are left; any number of threads may run
// it at once on the same call. Each output row is one task's, so the result does not depend on
// which thread ran what.
template <typename T, typename C, typename E>
void forward(const Options& o, View4<const T> q, View4<const T> k, View4<const T> v, View4<T> out, View3<E> lse,
             const void* mask, const int64_t* ms, TaskCounter& next) {
  constexpr int L = kLanes<C>;
  const int64_t Dp = round_up(o.D, L);
  const int64_t group = o.Hq / o.Hkv;
  const int64_t q_blocks = (o.Sq + kBlockQ - 1) / kBlockQ;
  const int64_t tasks = forward_tasks(o);
  const float p_drop = static_cast<float>(o.dropout_p);
  const C inv_keep = static_cast<C>(1.0 / (1.0 - o.dropout_p));
  const C scale = static_cast<C>(o.scale * kLog2e);  // scores in log2 units, folded into Qᵀ
  const C neg_inf = -std::numeric_limits<C>::infinity();

  {
    Scratch<C> qt_buf(Dp * kBlockQ), k_buf(kBlockK * Dp), v_buf(kBlockK * Dp), s_buf(kBlockK * kBlockQ),
        o_buf(kBlockQ * Dp), m_buf(kBlockQ), l_buf(kBlockQ), alpha_buf(kBlockQ);
    for (int64_t task = next.claim(); task < tasks; task = next.claim()) {
      const int64_t b = task / (o.Hq * q_blocks);
      const int64_t h = task / q_blocks % o.Hq;
      const int64_t i0 = task % q_blocks * kBlockQ;
      const int64_t hk = h / group;
      const int M = static_cast<int>(std::min<int64_t>(kBlockQ, o.Sq - i0));
      C *st = s_buf.get(), *acc = o_buf.get(), *m = m_buf.get(), *l = l_buf.get(), *alpha = alpha_buf.get();
      std::fill(acc, acc + M * Dp, C(0));
      std::fill(m, m + kBlockQ, neg_inf);
      std::fill(l, l + kBlockQ, C(0));
      pack_transposed<T, C, kBlockQ>(q, b, h, i0, M, o.D, Dp, qt_buf.get(), scale);
      const int64_t j_end = o.causal ? std::min<int64_t>(o.Skv, i0 + M) : o.Skv;

      for (int64_t j0 = 0; j0 < j_end; j0 += kBlockK) {
        const int N = static_cast<int>(std::min<int64_t>(kBlockK, j_end - j0));
        const RowTile<T, C> kr = row_tile<T, C>(k, b, hk, j0, N, o.D, Dp, k_buf.get());
        gemm_nt<C>(N, kBlockQ, static_cast<int>(Dp), kr.ptr, kr.ld, qt_buf.get(), kBlockQ, st, kBlockQ);

        // Mask each key row; the new running max (log2 units) of every query column.
        Vec<C> m_new[kBlockQ / L];
        for (int c = 0; c < kBlockQ; c += L) m_new[c / L] = load(m + c);
        for (int r = 0; r < N; ++r) {
          C* srow = st + r * kBlockQ;
          mask_key_row<T, C>(srow, o, mask, ms, b, h, i0, M, j0 + r);
          for (int c = 0; c < kBlockQ; c += L) {
            const Vec<C> x = load(srow + c);
            m_new[c / L] = x > m_new[c / L] ? x : m_new[c / L];
          }
        }
        // Columns with every key so far masked keep max -inf; shifting them by 0 makes their P 0.
        Vec<C> shift[kBlockQ / L];
        for (int c = 0; c < kBlockQ; c += L) {
          const Vec<C> mn = m_new[c / L];
          shift[c / L] = mn == splat(neg_inf) ? splat(C(0)) : mn;
          const Vec<C> a = vexp2(load(m + c) - shift[c / L]);
          store(alpha + c, a);
          store(l + c, load(l + c) * a);
          store(m + c, mn);
        }
        for (int r = 0; r < N; ++r) {
          C* srow = st + r * kBlockQ;
          for (int c = 0; c < kBlockQ; c += L) {
            const Vec<C> p = vexp2(load(srow + c) - shift[c / L]);
            store(srow + c, p);
            store(l + c, load(l + c) + p);
          }
          if (o.dropout_p > 0.0) {
            const uint64_t first = dropout_counter(o, b, h, i0, j0 + r);
            for (int c = 0; c < M; ++c) {
              const uint64_t counter = first + static_cast<uint64_t>(c) * static_cast<uint64_t>(o.Skv);
              if (philox_uniform(o.seed, counter) < p_drop) srow[c] = C(0);
              else srow[c] *= inv_keep;
            }
          }
        }
        for (int c = 0; c < M; ++c) {
          if (alpha[c] == C(1)) continue;
          C* orow = acc + c * Dp;
          const Vec<C> a = splat(alpha[c]);
          for (int64_t d = 0; d < Dp; d += L) store(orow + d, load(orow + d) * a);
        }
        const RowTile<T, C> vt = row_tile<T, C>(v, b, hk, j0, N, o.D, Dp, v_buf.get());
        gemm_acc<C>(M, static_cast<int>(Dp), N, st, 1, kBlockQ, vt.ptr, vt.ld, acc, Dp);
      }

      for (int c = 0; c < M; ++c) {
        T* dst = out.row(b, h, i0 + c);
        const C* orow = acc + c * Dp;
        if (l[c] == C(0)) {  // fully masked row
          for (int64_t d = 0; d < o.D; ++d) store_from(dst + d * out.s3, C(0));
          lse.at(b, h, i0 + c) = std::numeric_limits<E>::infinity();
          continue;
        }
        const C inv_l = C(1) / l[c];
        for (int64_t d = 0; d < o.D; ++d) store_from(dst + d * out.s3, orow[d] * inv_l);
        lse.at(b, h, i0 + c) = static_cast<E>(m[c] * static_cast<C>(kLn2) + std::log(l[c]));
      }
    }
  }
}

}  // namespace flash
