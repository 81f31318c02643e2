// Philox 4x32-10 and the uniform float of Triton's tl.rand, bit for bit as ember.core.philox: the
// counter of element (b, h, i, j) is offset + ((b * Hq + h) * Sq + i) * Skv + j (mod 2^64), split
// into (low, high) words; the key is the seed's (low, high) words. Only the first output word is
// needed for rand, so the other three are never formed after the last round.
#pragma once

#include <cstdint>

namespace flash {

inline uint32_t philox_first_word(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p2 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p2 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p2);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
}

// tl.rand: the word as int32, negatives bit-flipped, times 4.6566127342e-10 in float32.
inline float philox_uniform(uint64_t seed, uint64_t counter) {
  int32_t x = static_cast<int32_t>(philox_first_word(seed, counter));
  if (x < 0) x = ~x;
  return static_cast<float>(x) * 4.6566127342e-10f;
}

// Dropout factors of one row segment: 1/(1-p) where kept, 0 where dropped.
template <typename C>
inline void dropout_factors(C* factor, int n, uint64_t seed, uint64_t first_counter, float p, C inv_keep) {
  for (int j = 0; j < n; ++j) {
    factor[j] = philox_uniform(seed, first_counter + static_cast<uint64_t>(j)) >= p ? inv_keep : C(0);
  }
}

}  // namespace flash
