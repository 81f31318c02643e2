// FlashAttention-2 forward (Dao, arXiv 2307.08691, algorithm 1) on the CPU. One task is one
// kBlockQ-row tile of queries of one (batch, query head); tasks run in parallel under OpenMP with
// dynamic scheduling (causal tiles differ in cost). A task streams the key/value tiles its rows can
// see, keeping the running row max m, the running sum l and the unnormalized output O in scratch
// the size of one tile, and rescales O by exp(m_old - m_new) when the max grows. Nothing of size
// Sq x Skv ever exists.
#pragma once

#include <cmath>
#include <limits>

#include "microkernels.h"
#include "philox.h"
#include "problem.h"

namespace flash {

template <typename T, typename C>
void forward(const Options& o, View4<const T> q, View4<const T> k, View4<const T> v, View4<T> out, View3f lse,
             const void* mask, const int64_t* ms) {
  const int64_t Dp = round_up(o.D, kLanes<C>);
  const int64_t group = o.Hq / o.Hkv;
  const int64_t q_blocks = (o.Sq + kBlockQ - 1) / kBlockQ;
  const int64_t tasks = o.B * o.Hq * q_blocks;
  const float p_drop = static_cast<float>(o.dropout_p);
  const C inv_keep = static_cast<C>(1.0 / (1.0 - o.dropout_p));
  const C neg_inf = -std::numeric_limits<C>::infinity();

#pragma omp parallel
  {
    Scratch<C> q_buf(kBlockQ * Dp), kt_buf(Dp * kBlockK), v_buf(kBlockK * Dp), s_buf(kBlockQ * kBlockK),
        o_buf(kBlockQ * Dp), m_buf(kBlockQ), l_buf(kBlockQ), f_buf(kBlockK);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / (o.Hq * q_blocks);
      const int64_t h = task / q_blocks % o.Hq;
      const int64_t i0 = task % q_blocks * kBlockQ;
      const int64_t hk = h / group;
      const int M = static_cast<int>(std::min<int64_t>(kBlockQ, o.Sq - i0));
      C *s = s_buf.get(), *acc = o_buf.get(), *m = m_buf.get(), *l = l_buf.get();
      std::fill(acc, acc + M * Dp, C(0));
      std::fill(m, m + M, neg_inf);
      std::fill(l, l + M, C(0));
      const RowTile<T, C> qt = row_tile<T, C>(q, b, h, i0, M, o.D, Dp, q_buf.get());
      const int64_t j_end = o.causal ? std::min<int64_t>(o.Skv, i0 + M) : o.Skv;

      for (int64_t j0 = 0; j0 < j_end; j0 += kBlockK) {
        const int N = static_cast<int>(std::min<int64_t>(kBlockK, j_end - j0));
        pack_transposed<T, C>(k, b, hk, j0, N, o.D, Dp, kt_buf.get());
        gemm_nt<C>(M, kBlockK, static_cast<int>(Dp), qt.ptr, qt.ld, kt_buf.get(), kBlockK, s, kBlockK);
        for (int r = 0; r < M; ++r) {
          C* srow = s + r * kBlockK;
          finish_scores<T, C>(srow, o, mask, ms, b, h, i0 + r, j0, N);
          const C m_new = std::max(m[r], row_max(srow));
          if (m_new == neg_inf) {  // every key so far masked out: this tile adds nothing
            std::fill(srow, srow + kBlockK, C(0));
            continue;
          }
          const C alpha = sexp(m[r] - m_new);
          l[r] = l[r] * alpha + exp_row(srow, m_new);
          m[r] = m_new;
          if (alpha != C(1)) {
            C* orow = acc + r * Dp;
            for (int64_t d = 0; d < Dp; ++d) orow[d] *= alpha;
          }
          if (o.dropout_p > 0.0) {
            dropout_factors(f_buf.get(), N, o.seed, dropout_counter(o, b, h, i0 + r, j0), p_drop, inv_keep);
            for (int j = 0; j < N; ++j) srow[j] *= f_buf.get()[j];
          }
        }
        const RowTile<T, C> vt = row_tile<T, C>(v, b, hk, j0, N, o.D, Dp, v_buf.get());
        gemm_acc<C>(M, static_cast<int>(Dp), N, s, kBlockK, 1, vt.ptr, vt.ld, acc, Dp);
      }

      for (int r = 0; r < M; ++r) {
        T* dst = out.row(b, h, i0 + r);
        const C* orow = acc + r * Dp;
        if (l[r] == C(0)) {  // fully masked row
          for (int64_t d = 0; d < o.D; ++d) store_from(dst + d * out.s3, C(0));
          lse.at(b, h, i0 + r) = std::numeric_limits<float>::infinity();
          continue;
        }
        const C inv_l = C(1) / l[r];
        for (int64_t d = 0; d < o.D; ++d) store_from(dst + d * out.s3, orow[d] * inv_l);
        lse.at(b, h, i0 + r) = static_cast<float>(m[r] + std::log(l[r]));
      }
    }
  }
}

}  // namespace flash
