// FlashAttention-2 backward (arXiv 2307.08691, algorithm 2) on the CPU. One task is one (batch,
// key/value head): it owns dK and dV of that head and dQ of its whole query group, so the tasks
// share no output and need no atomics or second pass (five tile products per tile pair, as in the
// paper). Within a task, key tiles are the outer loop (dK, dV of a tile accumulate in scratch), and
// the query tiles of every head in the group are the inner loop; P is recomputed from the saved
// lse, and dS = P ∘ (dP - Δ) with Δ = rowsum(dO ∘ O). dQ accumulates in a per-task Sq x D scratch
// per group head (the one buffer longer than a tile, and never Sq x Skv). When there are few
// heads, a head's key tiles are dealt out to several tasks whose dQ scratches are summed by
// `backward_finish`.
#pragma once

#include <cmath>
#include <limits>

#include "microkernels.h"
#include "philox.h"
#include "problem.h"

namespace flash {

// Tasks a call should have at least, and the most memory the split tasks' dQ partials may take.
// Both fix the split from the problem alone, never from the thread count, so dQ's partial sums are
// added in the same order on every machine and at every thread count.
constexpr int64_t kBackwardTasks = 8;
constexpr int64_t kPartialsBytes = int64_t(64) << 20;

// How many tasks share the key tiles of one (batch, key/value head).
template <typename C>
int64_t backward_splits(const Options& o) {
  const int64_t heads = std::max<int64_t>(o.B * o.Hkv, 1);
  const int64_t key_blocks = std::max<int64_t>((o.Skv + kBlockK - 1) / kBlockK, 1);
  const int64_t dq_bytes = o.Hq * o.B * o.Sq * round_up(o.D, kLanes<C>) * static_cast<int64_t>(sizeof(C));
  const int64_t by_memory = std::max<int64_t>(kPartialsBytes / std::max<int64_t>(dq_bytes, 1), 1);
  return std::clamp<int64_t>((kBackwardTasks + heads - 1) / heads, 1, std::min(key_blocks, by_memory));
}

template <typename C>
int64_t backward_tasks(const Options& o) {
  return o.B * o.Hkv * backward_splits<C>(o);
}

// Elements of the split tasks' dQ partials (0 when a head is one task).
template <typename C>
int64_t backward_partials(const Options& o) {
  const int64_t splits = backward_splits<C>(o);
  return splits > 1 ? backward_tasks<C>(o) * (o.Hq / o.Hkv) * o.Sq * round_up(o.D, kLanes<C>) : 0;
}

// grad_q of one (batch, kv head)'s query group: scale times the sum of `count` accumulators.
template <typename T, typename C>
void write_dq(const Options& o, const View4<T>& dq, int64_t b, int64_t hk, int64_t group, int64_t Dp, const C* acc,
              int64_t count, int64_t stride) {
  const C scale = static_cast<C>(o.scale);
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = 0; i < o.Sq; ++i) {
      T* dst = dq.row(b, hk * group + g, i);
      const C* src = acc + (g * o.Sq + i) * Dp;
      for (int64_t d = 0; d < o.D; ++d) {
        C sum = 0;
        for (int64_t n = 0; n < count; ++n) sum += src[n * stride + d];
        store_from(dst + d * dq.s3, sum * scale);
      }
    }
  }
}

// Runs the tasks this thread claims from `next` until none are left; any number of threads may run
// it at once on the same call. `partials` holds backward_partials(o) elements; when there are any,
// backward_finish writes dQ once every task is done.
template <typename T, typename C, typename E>
void backward(const Options& o, View4<const T> dout, View4<const T> q, View4<const T> k, View4<const T> v,
              View4<const T> out, View3<E> lse, View4<T> dq, View4<T> dk, View4<T> dv, const void* mask,
              const int64_t* ms, TaskCounter& next, C* partials) {
  constexpr int L = kLanes<C>;
  const int64_t Dp = round_up(o.D, L);
  const int64_t group = o.Hq / o.Hkv;
  const int64_t splits = backward_splits<C>(o);
  const int64_t tasks = backward_tasks<C>(o);
  const int64_t dq_size = group * o.Sq * Dp;
  const float p_drop = static_cast<float>(o.dropout_p);
  const C inv_keep = static_cast<C>(1.0 / (1.0 - o.dropout_p));
  const C scale = static_cast<C>(o.scale);
  const bool dropout = o.dropout_p > 0.0;

  {
    Scratch<C> q_buf(kBlockQ * Dp), do_buf(kBlockQ * Dp), kt_buf(Dp * kBlockK), vt_buf(Dp * kBlockK),
        k_buf(kBlockK * Dp), p_buf(kBlockQ * kBlockK), pd_buf(kBlockQ * kBlockK), ds_buf(kBlockQ * kBlockK),
        dk_buf(kBlockK * Dp), dv_buf(kBlockK * Dp), dq_buf(splits > 1 ? 0 : dq_size), delta_buf(group * o.Sq),
        lse_buf(group * o.Sq);
    for (int64_t task = next.claim(); task < tasks; task = next.claim()) {
      const int64_t b = task / splits / o.Hkv, hk = task / splits % o.Hkv, split = task % splits;
      C* dq_acc = splits > 1 ? partials + task * dq_size : dq_buf.get();
      C *delta = delta_buf.get(), *row_lse = lse_buf.get();
      std::fill(dq_acc, dq_acc + dq_size, C(0));
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = hk * group + g;
        for (int64_t i = 0; i < o.Sq; ++i) {
          const T *a = dout.row(b, h, i), *c = out.row(b, h, i);
          C sum = 0;
          for (int64_t d = 0; d < o.D; ++d) sum += load_as<C>(a + d * dout.s3) * load_as<C>(c + d * out.s3);
          delta[g * o.Sq + i] = sum;
          row_lse[g * o.Sq + i] = static_cast<C>(lse.at(b, h, i) * kLog2e);  // log2 units, as the scores
        }
      }

      // Ranges interleave key tiles, so causal work (heavier for early keys) is shared evenly.
      for (int64_t j0 = split * kBlockK; j0 < o.Skv; j0 += splits * kBlockK) {
        const int N = static_cast<int>(std::min<int64_t>(kBlockK, o.Skv - j0));
        pack_transposed<T, C, kBlockK>(k, b, hk, j0, N, o.D, Dp, kt_buf.get());
        pack_transposed<T, C, kBlockK>(v, b, hk, j0, N, o.D, Dp, vt_buf.get());
        const RowTile<T, C> kr = row_tile<T, C>(k, b, hk, j0, N, o.D, Dp, k_buf.get());
        C *dk_acc = dk_buf.get(), *dv_acc = dv_buf.get();
        std::fill(dk_acc, dk_acc + kBlockK * Dp, C(0));
        std::fill(dv_acc, dv_acc + kBlockK * Dp, C(0));
        const int64_t i_first = o.causal ? j0 : 0;  // earlier queries see none of these keys

        for (int64_t g = 0; g < group; ++g) {
          const int64_t h = hk * group + g;
          for (int64_t i0 = i_first; i0 < o.Sq; i0 += kBlockQ) {
            const int M = static_cast<int>(std::min<int64_t>(kBlockQ, o.Sq - i0));
            const RowTile<T, C> qt = row_tile<T, C>(q, b, h, i0, M, o.D, Dp, q_buf.get());
            const RowTile<T, C> dot = row_tile<T, C>(dout, b, h, i0, M, o.D, Dp, do_buf.get());
            C *p = p_buf.get(), *ds = ds_buf.get();
            C* pd = dropout ? pd_buf.get() : p;
            gemm_nt<C>(M, kBlockK, static_cast<int>(Dp), qt.ptr, qt.ld, kt_buf.get(), kBlockK, p, kBlockK);
            gemm_nt<C>(M, kBlockK, static_cast<int>(Dp), dot.ptr, dot.ld, vt_buf.get(), kBlockK, ds, kBlockK);
            for (int r = 0; r < M; ++r) {
              const int64_t i = i0 + r;
              C *prow = p + r * kBlockK, *dsrow = ds + r * kBlockK;
              finish_scores<T, C>(prow, o, mask, ms, b, h, i, j0, N);
              exp_row(prow, row_lse[g * o.Sq + i]);
              const Vec<C> dlt = splat(delta[g * o.Sq + i]);
              if (dropout) {
                C* pdrow = pd + r * kBlockK;
                std::fill(pdrow, pdrow + kBlockK, C(0));
                dropout_factors(pdrow, N, o.seed, dropout_counter(o, b, h, i, j0), p_drop, inv_keep);
                for (int j = 0; j < kBlockK; j += L) {
                  const Vec<C> f = load(pdrow + j), pv = load(prow + j);
                  store(dsrow + j, pv * (load(dsrow + j) * f - dlt));
                  store(pdrow + j, pv * f);
                }
              } else {
                for (int j = 0; j < kBlockK; j += L) {
                  const Vec<C> pv = load(prow + j);
                  store(dsrow + j, pv * (load(dsrow + j) - dlt));
                }
              }
            }
            gemm_acc<C>(N, static_cast<int>(Dp), M, pd, 1, kBlockK, dot.ptr, dot.ld, dv_acc, Dp);
            gemm_acc<C>(N, static_cast<int>(Dp), M, ds, 1, kBlockK, qt.ptr, qt.ld, dk_acc, Dp);
            gemm_acc<C>(M, static_cast<int>(Dp), N, ds, kBlockK, 1, kr.ptr, kr.ld,
                        dq_acc + (g * o.Sq + i0) * Dp, Dp);
          }
        }

        for (int r = 0; r < N; ++r) {
          T *kd = dk.row(b, hk, j0 + r), *vd = dv.row(b, hk, j0 + r);
          for (int64_t d = 0; d < o.D; ++d) {
            store_from(kd + d * dk.s3, dk_acc[r * Dp + d] * scale);
            store_from(vd + d * dv.s3, dv_acc[r * Dp + d]);
          }
        }
      }

      if (splits == 1) write_dq<T, C>(o, dq, b, hk, group, Dp, dq_acc, 1, 0);
    }
  }
}

// dQ of the heads this thread claims from `next`, each the sum of its split tasks' partials (in
// split order); nothing to do when backward_partials(o) is 0.
template <typename T, typename C>
void backward_finish(const Options& o, View4<T> dq, const C* partials, TaskCounter& next) {
  const int64_t splits = backward_splits<C>(o);
  if (splits == 1) return;
  const int64_t Dp = round_up(o.D, kLanes<C>);
  const int64_t group = o.Hq / o.Hkv;
  const int64_t dq_size = group * o.Sq * Dp;
  for (int64_t head = next.claim(); head < o.B * o.Hkv; head = next.claim())
    write_dq<T, C>(o, dq, head / o.Hkv, head % o.Hkv, group, Dp, partials + head * splits * dq_size, splits, dq_size);
}

}  // namespace flash
