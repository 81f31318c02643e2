// Storage types of the arrays and their conversion to the compute type. float16 and bfloat16 are
// held as raw 16-bit words (the layouts of NumPy's float16 and ml_dtypes' bfloat16) and converted
// with round-to-nearest-even, so results equal NumPy's own `astype`.
#pragma once

#include <cstdint>
#include <cstring>

namespace flash {

struct f16 {
  uint16_t bits;
};
struct bf16 {
  uint16_t bits;
};

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float to_float(f16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline f16 from_float_f16(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7e00u)};  // NaN
  if (magnitude >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // rounds to inf
  if (magnitude < 0x38800000u) {
    // Result is subnormal (or zero) in float16: round magnitude / 2^-24 to nearest even.
    const float scaled = bits_to_float(magnitude) * 16777216.0f;  // exact: a power of two
    float rounded = static_cast<float>(static_cast<int32_t>(scaled));
    const float fraction = scaled - rounded;
    if (fraction > 0.5f || (fraction == 0.5f && (static_cast<int32_t>(rounded) & 1))) rounded += 1.0f;
    return {static_cast<uint16_t>(sign | static_cast<uint16_t>(rounded))};
  }
  // Normal: rebias the exponent, then round the 13 dropped mantissa bits to nearest even.
  uint32_t v = magnitude - (112u << 23);
  const uint32_t lsb = (v >> 13) & 1u;
  v += 0xfffu + lsb;
  return {static_cast<uint16_t>(sign | (v >> 13))};
}

inline float to_float(bf16 h) { return bits_to_float(static_cast<uint32_t>(h.bits) << 16); }

inline bf16 from_float_bf16(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40u)};  // quiet NaN
  const uint32_t lsb = (u >> 16) & 1u;
  return {static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16)};
}

// load<C>(p): the element at p in compute type C; store(p, x): x rounded to the storage type.
template <typename C>
inline C load_as(const float* p) {
  return static_cast<C>(*p);
}
template <typename C>
inline C load_as(const double* p) {
  return static_cast<C>(*p);
}
template <typename C>
inline C load_as(const f16* p) {
  return static_cast<C>(to_float(*p));
}
template <typename C>
inline C load_as(const bf16* p) {
  return static_cast<C>(to_float(*p));
}

inline void store_from(float* p, float x) { *p = x; }
inline void store_from(float* p, double x) { *p = static_cast<float>(x); }
inline void store_from(double* p, double x) { *p = x; }
inline void store_from(f16* p, float x) { *p = from_float_f16(x); }
inline void store_from(bf16* p, float x) { *p = from_float_bf16(x); }

}  // namespace flash
