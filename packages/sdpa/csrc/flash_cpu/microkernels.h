// The two register-blocked products every attention step is made of, on packed compute-type tiles
// whose rows are contiguous and a whole number of vectors long:
//
//   gemm_nt:  C[M x N]  = A[M x K] · B           with B packed as K rows of N (a transposed block),
//   gemm_acc: C[M x W] += A(M x K) · X[K x W]    with A read through (row, column) strides.
//
// gemm_nt gives the scores Q Kᵀ and dO Vᵀ; gemm_acc gives P V, dS K, and, with A's strides
// swapped, Pᵀ dO and dSᵀ Q. Each micro-kernel keeps an MR x NV-vector tile of C in registers and
// streams K: one vector load per column vector and one broadcast per row per step.
#pragma once

#include <algorithm>
#include <cstdint>

#include "simd.h"

namespace flash {

// Register tiles: 24 accumulators fit AVX-512's 32 registers; 12 (plus loads) fit the 16 of AVX2/SSE.
constexpr int kRowsNT = 6;
constexpr int kVecsNT = kVectorBytes == 64 ? 4 : 2;
constexpr int kRowsAcc = 6;
constexpr int kVecsAcc = kVectorBytes == 64 ? 4 : 2;

template <typename C, int MR, int NV>
inline void micro_nt(int K, const C* a, int64_t lda, const C* b, int64_t ldb, C* c, int64_t ldc) {
  constexpr int L = kLanes<C>;
  Vec<C> acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = Vec<C>{};
  for (int k = 0; k < K; ++k) {
    Vec<C> bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = load(b + k * ldb + v * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const C ar = a[r * lda + k];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] += ar * bv[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) store(c + r * ldc + v * L, acc[r][v]);
}

template <typename C, int MR>
inline void nt_rows(int N, int K, const C* a, int64_t lda, const C* b, int64_t ldb, C* c, int64_t ldc) {
  constexpr int L = kLanes<C>;
  int j = 0;
  for (; j + kVecsNT * L <= N; j += kVecsNT * L) micro_nt<C, MR, kVecsNT>(K, a, lda, b + j, ldb, c + j, ldc);
  for (; j < N; j += L) micro_nt<C, MR, 1>(K, a, lda, b + j, ldb, c + j, ldc);
}

template <typename C, int MR>
inline void nt_tail(int rows, int N, int K, const C* a, int64_t lda, const C* b, int64_t ldb, C* c, int64_t ldc) {
  if constexpr (MR > 0) {
    if (rows == MR) return nt_rows<C, MR>(N, K, a, lda, b, ldb, c, ldc);
    nt_tail<C, MR - 1>(rows, N, K, a, lda, b, ldb, c, ldc);
  }
}

// C = A B for M rows; N and the row lengths of B and C are multiples of the vector length.
template <typename C>
void gemm_nt(int M, int N, int K, const C* a, int64_t lda, const C* b, int64_t ldb, C* c, int64_t ldc) {
  int i = 0;
  for (; i + kRowsNT <= M; i += kRowsNT) nt_rows<C, kRowsNT>(N, K, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
  if (i < M) nt_tail<C, kRowsNT - 1>(M - i, N, K, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
}

template <typename C, int MR, int NV>
inline void micro_acc(int K, const C* a, int64_t sar, int64_t sat, const C* x, int64_t ldx, C* c, int64_t ldc) {
  constexpr int L = kLanes<C>;
  Vec<C> acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = load(c + r * ldc + v * L);
  for (int t = 0; t < K; ++t) {
    Vec<C> xv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) xv[v] = load(x + t * ldx + v * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const C ar = a[r * sar + t * sat];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] += ar * xv[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) store(c + r * ldc + v * L, acc[r][v]);
}

template <typename C, int MR>
inline void acc_rows(int W, int K, const C* a, int64_t sar, int64_t sat, const C* x, int64_t ldx, C* c,
                     int64_t ldc) {
  constexpr int L = kLanes<C>;
  int d = 0;
  for (; d + kVecsAcc * L <= W; d += kVecsAcc * L) micro_acc<C, MR, kVecsAcc>(K, a, sar, sat, x + d, ldx, c + d, ldc);
  for (; d < W; d += L) micro_acc<C, MR, 1>(K, a, sar, sat, x + d, ldx, c + d, ldc);
}

template <typename C, int MR>
inline void acc_tail(int rows, int W, int K, const C* a, int64_t sar, int64_t sat, const C* x, int64_t ldx, C* c,
                     int64_t ldc) {
  if constexpr (MR > 0) {
    if (rows == MR) return acc_rows<C, MR>(W, K, a, sar, sat, x, ldx, c, ldc);
    acc_tail<C, MR - 1>(rows, W, K, a, sar, sat, x, ldx, c, ldc);
  }
}

// C += A X: A(r, t) = a[r * sar + t * sat]; W (the row length of X and C) is a multiple of the vector length.
template <typename C>
void gemm_acc(int M, int W, int K, const C* a, int64_t sar, int64_t sat, const C* x, int64_t ldx, C* c,
              int64_t ldc) {
  int i = 0;
  for (; i + kRowsAcc <= M; i += kRowsAcc) acc_rows<C, kRowsAcc>(W, K, a + i * sar, sar, sat, x, ldx, c + i * ldc, ldc);
  if (i < M) acc_tail<C, kRowsAcc - 1>(M - i, W, K, a + i * sar, sar, sat, x, ldx, c + i * ldc, ldc);
}

}  // namespace flash
