// What one attention call is about: sizes, options, and strided 4-d views of the caller's arrays
// (strides in elements, any sign, 0 for broadcast dims), plus the tile helpers both passes share:
// packing strided rows into contiguous compute-type tiles and applying scale, mask and causality
// to a tile of scores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <type_traits>

#include "convert.h"
#include "simd.h"

namespace flash {

constexpr int kBlockQ = 64;   // query rows per tile
constexpr int kBlockK = 64;   // keys per tile (a multiple of every micro-kernel's column width)

template <typename T>
struct View4 {
  T* data;
  int64_t s0, s1, s2, s3;
  T* row(int64_t b, int64_t h, int64_t i) const { return data + b * s0 + h * s1 + i * s2; }
};

// The log-sum-exp (B, Hq, Sq): float32, or float64 beside float64 inputs.
template <typename E>
struct View3 {
  E* data;
  int64_t s0, s1, s2;
  E& at(int64_t b, int64_t h, int64_t i) const { return data[b * s0 + h * s1 + i * s2]; }
};

enum class MaskKind { none, boolean, additive };

struct Options {
  int64_t B, Hq, Hkv, Sq, Skv, D;
  double scale;
  bool causal;
  MaskKind mask_kind;
  double dropout_p;
  uint64_t seed, offset;
};

// The next unclaimed task of a call, shared by the threads that run it.
class TaskCounter {
 public:
  int64_t claim() { return next_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> next_{0};
};

// A 64-byte aligned scratch array of n elements, zero-filled, freed on scope exit.
template <typename C>
class Scratch {
 public:
  explicit Scratch(int64_t n) : n_(std::max<int64_t>(n, 1)) {
    p_ = static_cast<C*>(::operator new(n_ * sizeof(C), std::align_val_t(64)));
    std::fill(p_, p_ + n_, C(0));
  }
  ~Scratch() { ::operator delete(p_, std::align_val_t(64)); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  C* get() const { return p_; }

 private:
  int64_t n_;
  C* p_;
};

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// A tile of `rows` rows of a strided array, readable as contiguous compute-type rows of `ld`
// elements: the caller's memory itself when it already is, otherwise a converted, zero-padded copy.
template <typename T, typename C>
struct RowTile {
  const C* ptr;
  int64_t ld;
};

template <typename T, typename C>
inline bool rows_are_direct(const View4<const T>& x, int64_t D, int64_t Dp) {
  if constexpr (std::is_same_v<T, C>) return x.s3 == 1 && D == Dp;
  return false;
}

template <typename T, typename C>
inline RowTile<T, C> row_tile(const View4<const T>& x, int64_t b, int64_t h, int64_t i0, int rows, int64_t D, int64_t Dp,
                              C* buf) {
  if (rows_are_direct<T, C>(x, D, Dp)) return {reinterpret_cast<const C*>(x.row(b, h, i0)), x.s2};
  for (int r = 0; r < rows; ++r) {
    const T* src = x.row(b, h, i0 + r);
    C* dst = buf + r * Dp;
    for (int64_t d = 0; d < D; ++d) dst[d] = load_as<C>(src + d * x.s3);
    for (int64_t d = D; d < Dp; ++d) dst[d] = C(0);
  }
  return {buf, Dp};
}

// Rows i0..i0+rows of x, times factor, transposed into dst (Dp rows of W), zero elsewhere.
template <typename T, typename C, int W>
inline void pack_transposed(const View4<const T>& x, int64_t b, int64_t h, int64_t i0, int rows, int64_t D, int64_t Dp,
                            C* dst, C factor = C(1)) {
  std::fill(dst, dst + Dp * W, C(0));
  for (int r = 0; r < rows; ++r) {
    const T* src = x.row(b, h, i0 + r);
    for (int64_t d = 0; d < D; ++d) dst[d * W + r] = load_as<C>(src + d * x.s3) * factor;
  }
}

// Row j of a transposed score tile (queries i0..i0+M as columns), in log2 units: the mask (times
// log2 e) added or applied, and -inf where causality hides key j from a query (j > i).
template <typename T, typename C>
inline void mask_key_row(C* s, const Options& o, const void* mask, const int64_t* ms, int64_t b, int64_t h,
                         int64_t i0, int M, int64_t j) {
  const C neg_inf = -std::numeric_limits<C>::infinity();
  int first = 0;  // first query column that sees key j
  if (o.causal) {
    first = static_cast<int>(std::clamp<int64_t>(j - i0, 0, M));
    for (int c = 0; c < first; ++c) s[c] = neg_inf;
  }
  if (o.mask_kind == MaskKind::boolean) {
    const uint8_t* m = static_cast<const uint8_t*>(mask) + b * ms[0] + h * ms[1] + i0 * ms[2] + j * ms[3];
    for (int c = first; c < M; ++c)
      if (!m[c * ms[2]]) s[c] = neg_inf;
  } else if (o.mask_kind == MaskKind::additive) {
    const T* m = static_cast<const T*>(mask) + b * ms[0] + h * ms[1] + i0 * ms[2] + j * ms[3];
    for (int c = first; c < M; ++c) s[c] += load_as<C>(m + c * ms[2]) * static_cast<C>(kLog2e);
  }
}

// Scores row s[0:kBlockK] of query i against keys j0.. in log2 units: times scale·log2(e), plus the
// mask (times log2 e); -inf where
// masked out, causal (j > i) or past the last key (n valid keys).
template <typename T, typename C>
inline void finish_scores(C* s, const Options& o, const void* mask, const int64_t* ms, int64_t b, int64_t h,
                          int64_t i, int64_t j0, int n) {
  constexpr int L = kLanes<C>;
  const C scale = static_cast<C>(o.scale * kLog2e);
  for (int j = 0; j < kBlockK; j += L) store(s + j, load(s + j) * scale);
  int limit = n;
  if (o.causal) limit = static_cast<int>(std::clamp<int64_t>(i - j0 + 1, 0, n));
  const C neg_inf = -std::numeric_limits<C>::infinity();
  if (o.mask_kind == MaskKind::boolean) {
    const uint8_t* m = static_cast<const uint8_t*>(mask) + b * ms[0] + h * ms[1] + i * ms[2] + j0 * ms[3];
    for (int j = 0; j < limit; ++j)
      if (!m[j * ms[3]]) s[j] = neg_inf;
  } else if (o.mask_kind == MaskKind::additive) {
    const T* m = static_cast<const T*>(mask) + b * ms[0] + h * ms[1] + i * ms[2] + j0 * ms[3];
    for (int j = 0; j < limit; ++j) s[j] += load_as<C>(m + j * ms[3]) * static_cast<C>(kLog2e);
  }
  for (int j = std::max(limit, 0); j < kBlockK; ++j) s[j] = neg_inf;
}

template <typename C>
inline C row_max(const C* s) {
  constexpr int L = kLanes<C>;
  Vec<C> m = load(s);
  for (int j = L; j < kBlockK; j += L) {
    const Vec<C> x = load(s + j);
    m = x > m ? x : m;
  }
  C r = m[0];
  for (int l = 1; l < L; ++l) r = std::max(r, m[l]);
  return r;
}

// s <- 2^(s - shift) in place; returns the sum.
template <typename C>
inline C exp_row(C* s, C shift) {
  constexpr int L = kLanes<C>;
  Vec<C> total{};
  for (int j = 0; j < kBlockK; j += L) {
    const Vec<C> p = vexp2(load(s + j) - shift);
    store(s + j, p);
    total += p;
  }
  C r = 0;
  for (int l = 0; l < L; ++l) r += total[l];
  return r;
}

inline uint64_t dropout_counter(const Options& o, int64_t b, int64_t h, int64_t i, int64_t j) {
  return o.offset + static_cast<uint64_t>(((b * o.Hq + h) * o.Sq + i) * o.Skv + j);
}

}  // namespace flash
