// Portable SIMD through GCC/Clang vector extensions: the compiler lowers `Vec<C>` to the widest
// registers the target offers (zmm with AVX-512, ymm with AVX2, xmm or NEON otherwise), so the
// micro-kernels are written once and need no intrinsics. `exp` is a Cephes-style polynomial on
// whole vectors (about 1 ulp in float32), because a libm call per element would cost more than the
// matrix products it sits between.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace flash {

#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif

template <typename C>
struct VecTraits;

template <>
struct VecTraits<float> {
  typedef float type __attribute__((vector_size(kVectorBytes)));
  typedef float unaligned __attribute__((vector_size(kVectorBytes), aligned(4)));
  typedef int32_t itype __attribute__((vector_size(kVectorBytes)));
};

template <>
struct VecTraits<double> {
  typedef double type __attribute__((vector_size(kVectorBytes)));
  typedef double unaligned __attribute__((vector_size(kVectorBytes), aligned(8)));
  typedef int64_t itype __attribute__((vector_size(kVectorBytes)));
};

template <typename C>
using Vec = typename VecTraits<C>::type;

template <typename C>
constexpr int kLanes = kVectorBytes / static_cast<int>(sizeof(C));

template <typename C>
inline Vec<C> load(const C* p) {
  return *reinterpret_cast<const typename VecTraits<C>::unaligned*>(p);
}

template <typename C>
inline void store(C* p, Vec<C> v) {
  *reinterpret_cast<typename VecTraits<C>::unaligned*>(p) = v;
}

template <typename C>
inline Vec<C> splat(C x) {
  return Vec<C>{} + x;
}

// exp(x) for a whole vector; exactly 0 below the underflow threshold (so -inf gives 0).
inline Vec<float> vexp(Vec<float> x) {
  typedef Vec<float> V;
  typedef VecTraits<float>::itype VI;
  const V lo = splat(-87.33654f), hi = splat(88.0f);
  V xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (exact for |n| < 2^22).
  const V magic = splat(12582912.0f);
  V n = (xc * 1.44269504088896341f + magic) - magic;
  V r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  VI bits = (__builtin_convertvector(n, VI) + 127) << 23;
  V two_n;
  std::memcpy(&two_n, &bits, sizeof(two_n));
  V y = p * two_n;
  return x < lo ? splat(0.0f) : y;
}

inline Vec<double> vexp(Vec<double> x) {
  Vec<double> y;
  for (int i = 0; i < kLanes<double>; ++i) y[i] = std::exp(x[i]);
  return y;
}

constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

// 2^x for a whole vector, exactly 0 for -inf. The kernels keep scores in log2 units (the scale
// times log2(e) is folded into them), so the softmax needs 2^x, which AVX-512 computes in fewer
// instructions than exp: round, a degree-7 polynomial of the fraction, and vscalefps (which also
// flushes tiny results to 0). Elsewhere it is exp(x ln 2).
inline Vec<float> vexp2(Vec<float> x) {
#if defined(__AVX512F__)
  static_assert(kVectorBytes == 64);
  __m512 v;
  std::memcpy(&v, &x, sizeof(v));
  v = _mm512_max_ps(v, _mm512_set1_ps(-200.0f));  // keeps -inf out of the fraction; 2^-200 is 0
  const __m512 n = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(v, n);
  // Taylor coefficients (ln 2)^k / k!: below 1e-8 relative error on |f| <= 1/2.
  __m512 p = _mm512_set1_ps(1.5252733804059840e-5f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.5403530393381608e-4f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  const __m512 y = _mm512_scalef_ps(p, n);
  Vec<float> r;
  std::memcpy(&r, &y, sizeof(r));
  return r;
#else
  return vexp(x * static_cast<float>(kLn2));
#endif
}

inline Vec<double> vexp2(Vec<double> x) {
  Vec<double> y;
  for (int i = 0; i < kLanes<double>; ++i) y[i] = std::exp2(x[i]);
  return y;
}


}  // namespace flash
