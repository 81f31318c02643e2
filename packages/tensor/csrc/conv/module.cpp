// Direct stride-1 2-D convolutions of float32 NCHW arrays: the forward product (which is also the
// input gradient, by the flipped weight) and the weight gradient. ember/core/aten/nn/conv_direct.py
// prepares the arguments and chooses this kernel; conv_grid.py stays the general path.
//
// Every output element is a sum in an order fixed by the problem alone, never by the vector width,
// the thread count or the blocking:
// - forward: bias (or 0), then fma(w[o,c,i,j], x, acc) over c, i, j in that order;
// - weight gradient: sixteen partial sums per element, lane k taking the positions whose column is k
//   modulo 16 in (n, y, x) order through fma, then the sixteen added as a fixed tree.
// fma rounds once, so a 16-lane AVX-512 register, two AVX2 registers, four NEON registers or sixteen
// scalar std::fma calls give the same bits. The module is built with -ffp-contract=off so the
// compiler adds no contraction of its own.
//
// Each call computes one part of ``parts`` of the outputs (never a share of one output's sum), with
// the GIL released: the caller runs the parts on Ember's CPU threads (conv_direct.py). No OpenMP:
// libgomp's idle threads spin on the cores that NumPy's BLAS threads want next.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "../parallel/parallel.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace py = pybind11;

namespace {

// One hardware vector of float32 and the operations the kernels use.
#if defined(__AVX512F__)
struct Vec {
  using T = __m512;
  static constexpr int size = 16;
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  // A load kept in a register for several uses: GCC folds a plain one into every fma that reads it,
  // and the weight gradient then made 20 loads per 18 fmas (load-bound, at 60% of the forward's rate).
  static T load_once(const float* p) {
    T v = _mm512_loadu_ps(p);
    asm("" : "+v"(v));
    return v;
  }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T splat(float x) { return _mm512_set1_ps(x); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T keep(T v, const uint32_t* mask) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_loadu_si512(mask)));
  }
};
constexpr int kOutBlock = 8;  // output channels a forward tile holds
constexpr int kNarrowRows = 3;  // rows it holds when the columns fit one vector (24 accumulators of 32)
constexpr int kGradBlock = 4;  // output channels and
constexpr int kGradTaps = 6;  // (input channel, tap) pairs a weight-gradient tile holds (24 accumulators)
#elif defined(__AVX2__) && defined(__FMA__)
struct Vec {
  using T = __m256;
  static constexpr int size = 8;
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T load_once(const float* p) { return load(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T splat(float x) { return _mm256_set1_ps(x); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T keep(T v, const uint32_t* mask) {
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mask))));
  }
};
constexpr int kOutBlock = 4;
constexpr int kNarrowRows = 2;
constexpr int kGradBlock = 1;
constexpr int kGradTaps = 4;
#elif defined(__aarch64__)
struct Vec {
  using T = float32x4_t;
  static constexpr int size = 4;
  static T load(const float* p) { return vld1q_f32(p); }
  static T load_once(const float* p) { return load(p); }
  static void store(float* p, T v) { vst1q_f32(p, v); }
  static T splat(float x) { return vdupq_n_f32(x); }
  static T fma(T a, T b, T c) { return vfmaq_f32(c, a, b); }
  static T keep(T v, const uint32_t* mask) { return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), vld1q_u32(mask))); }
};
constexpr int kOutBlock = 8;
constexpr int kNarrowRows = 2;
constexpr int kGradBlock = 1;
constexpr int kGradTaps = 4;
#else
struct Vec {
  using T = float;
  static constexpr int size = 1;
  static T load(const float* p) { return *p; }
  static T load_once(const float* p) { return load(p); }
  static void store(float* p, T v) { *p = v; }
  static T splat(float x) { return x; }
  static T fma(T a, T b, T c) { return std::fma(a, b, c); }
  static T keep(T v, const uint32_t* mask) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bits &= *mask;
    std::memcpy(&v, &bits, 4);
    return v;
  }
};
constexpr int kOutBlock = 4;
constexpr int kNarrowRows = 1;
constexpr int kGradBlock = 1;
constexpr int kGradTaps = 4;
#endif

// The weight gradient's sixteen lanes, as many hardware vectors as that takes.
constexpr int kLanes = 16;
constexpr int kParts = kLanes / Vec::size;

struct Geometry {
  int64_t n, c, h, w;  // input
  int64_t o, cg, og, kh, kw, groups;  // weight (O, C/groups, kh, kw)
  int64_t ph, pw, dh, dw;
  int64_t ho, wo;  // output
};

Geometry geometry(const py::buffer_info& x, const py::buffer_info& w, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                  int64_t groups) {
  if (x.ndim != 4 || w.ndim != 4) throw std::invalid_argument("conv2d: input and weight must be 4-D");
  if (groups < 1 || dh < 1 || dw < 1 || ph < 0 || pw < 0) throw std::invalid_argument("conv2d: bad parameters");
  Geometry g{x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[1], 0, w.shape[2], w.shape[3],
             groups, ph, pw, dh, dw, 0, 0};
  if (g.o % groups || g.c != g.cg * groups) throw std::invalid_argument("conv2d: channels do not match the groups");
  g.og = g.o / groups;
  g.ho = g.h + 2 * ph - dh * (g.kh - 1);
  g.wo = g.w + 2 * pw - dw * (g.kw - 1);
  if (g.ho < 1 || g.wo < 1) throw std::invalid_argument("conv2d: the kernel is larger than the padded input");
  return g;
}

void check_shape(const py::buffer_info& a, std::initializer_list<int64_t> shape, const char* what) {
  if (a.ndim != static_cast<py::ssize_t>(shape.size()) || !std::equal(shape.begin(), shape.end(), a.shape.begin()))
    throw std::invalid_argument(std::string("conv2d: ") + what + " has the wrong shape");
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

void check_part(int64_t part, int64_t parts) {
  if (parts < 1 || part < 0 || part >= parts) throw std::invalid_argument("conv2d: part out of range");
}

void check_threads(int64_t threads) {
  if (threads < 1) throw std::invalid_argument("conv2d: threads must be at least 1");
}

// Rows [first, first + count) of channel plane ``src`` (h x w), shifted ``pad_top`` rows down and
// ``pad_left`` columns right into ``dst`` (count x pitch), zeros elsewhere.
void pad_rows(const float* src, int64_t h, int64_t w, int64_t first, int64_t count, int64_t pad_top, int64_t pad_left,
              float* dst, int64_t pitch) {
  for (int64_t r = 0; r < count; ++r) {
    float* row = dst + r * pitch;
    const int64_t y = first + r - pad_top;
    if (y < 0 || y >= h) {
      std::fill(row, row + pitch, 0.0f);
      continue;
    }
    const int64_t width = std::min(w, pitch - pad_left);
    std::fill(row, row + pad_left, 0.0f);
    std::memcpy(row + pad_left, src + y * w, sizeof(float) * width);
    std::fill(row + pad_left + width, row + pitch, 0.0f);
  }
}

// -- forward -------------------------------------------------------------------------------------

// R rows of outputs for OB output channels, XT vectors of columns at a time. ``rows`` is the padded
// input of the group's channels (cg planes of ``plane`` floats, row pitch ``pitch``) from the first
// output row's first tap row; ``packed`` the weights as [c][i][j][OB]; ``out`` each channel's first
// row (null: not stored). KW is the kernel's width when fixed at compile time (0: g.kw): a 3-tap row
// loop of 16 fmas a step, unrolled, lets GCC interleave the taps' loads and fmas (3x3, 16 channels:
// 91 -> 100 GFLOP/s on one Zen 4 core).
template <int OB, int XT, int R, int KW>
__attribute__((noinline)) void forward_tile(const Geometry& g, const float* rows, int64_t plane, int64_t pitch, const float* packed,
                  const float* bias, float* const* out) {
  constexpr int tile = XT * Vec::size;
  for (int64_t x0 = 0; x0 < g.wo; x0 += tile) {
    typename Vec::T acc[OB][R][XT];
    for (int o = 0; o < OB; ++o)
      for (int r = 0; r < R; ++r)
        for (int k = 0; k < XT; ++k) acc[o][r][k] = Vec::splat(bias[o]);
    for (int64_t c = 0; c < g.cg; ++c) {
      for (int64_t i = 0; i < g.kh; ++i) {
        const float* row = rows + c * plane + i * g.dh * pitch + x0;
        const float* taps = packed + (c * g.kh + i) * g.kw * OB;
        const int64_t kw = KW ? KW : g.kw;
        for (int64_t j = 0; j < kw; ++j) {
          typename Vec::T in[R][XT];
          for (int r = 0; r < R; ++r)
            for (int k = 0; k < XT; ++k) in[r][k] = Vec::load(row + r * pitch + j * g.dw + k * Vec::size);
          for (int o = 0; o < OB; ++o) {
            const typename Vec::T weight = Vec::splat(taps[j * OB + o]);
            for (int r = 0; r < R; ++r)
              for (int k = 0; k < XT; ++k) acc[o][r][k] = Vec::fma(weight, in[r][k], acc[o][r][k]);
          }
        }
      }
    }
    const int64_t valid = std::min<int64_t>(tile, g.wo - x0);
    for (int o = 0; o < OB; ++o) {
      if (!out[o]) continue;
      for (int r = 0; r < R; ++r) {
        float* target = out[o] + r * g.wo + x0;
        if (valid == tile) {
          for (int k = 0; k < XT; ++k) Vec::store(target + k * Vec::size, acc[o][r][k]);
        } else {
          float tail[tile];
          for (int k = 0; k < XT; ++k) Vec::store(tail + k * Vec::size, acc[o][r][k]);
          std::memcpy(target, tail, sizeof(float) * valid);
        }
      }
    }
  }
}

// forward_tile for the kernel's width: 1 and 3 compiled as constants, others read at run time.
template <int OB, int XT, int R, typename... Args>
void forward_tile_kw(const Geometry& g, const Args&... args) {
  if (g.kw == 3) return forward_tile<OB, XT, R, 3>(g, args...);
  if (g.kw == 1) return forward_tile<OB, XT, R, 1>(g, args...);
  forward_tile<OB, XT, R, 0>(g, args...);
}

// Rows are taken R at a time where the columns fit one vector (more accumulators for the same
// loads), one at a time otherwise. Items are (image, band of output rows), a few for each of
// ``splits`` threads; this call runs the items of part ``part`` of ``parts``, on the thread pool
// when ``threaded`` (any thread may run any item: each writes its own outputs).
template <int XT>
void forward_all(const Geometry& g, const float* x, const float* packed, const float* bias, float* out, int64_t part,
                 int64_t parts, int64_t splits, bool threaded) {
  constexpr int tile = XT * Vec::size;
  constexpr int R = XT == 1 ? kNarrowRows : 1;
  const int64_t blocks = (g.og + kOutBlock - 1) / kOutBlock;  // output-channel blocks per group
  const int64_t pitch = round_up(g.wo, tile) + (g.kw - 1) * g.dw;
  const int64_t per_image = std::min<int64_t>(g.ho, std::max<int64_t>(1, (4 * splits + g.n - 1) / g.n));
  const int64_t band = (g.ho + per_image - 1) / per_image;
  const int64_t bands = (g.ho + band - 1) / band;
  const int64_t span = band + (g.kh - 1) * g.dh;  // padded rows a band reads
  const int64_t plane = span * pitch;
  const int64_t items = g.n * bands;
  auto run_items = [&](int64_t first_item, int64_t last_item) {
    std::vector<float> rows(static_cast<size_t>(g.c * plane));
    for (int64_t item = first_item; item < last_item; ++item) {
      const int64_t n = item / bands, y0 = item % bands * band, y1 = std::min(g.ho, y0 + band);
      for (int64_t c = 0; c < g.c; ++c)
        pad_rows(x + (n * g.c + c) * g.h * g.w, g.h, g.w, y0, span, g.ph, g.pw, rows.data() + c * plane, pitch);
      for (int64_t group = 0; group < g.groups; ++group) {
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t o0 = group * g.og + b * kOutBlock;
          const float* weights = packed + (group * blocks + b) * g.cg * g.kh * g.kw * kOutBlock;
          const float* block_bias = bias + (group * blocks + b) * kOutBlock;
          for (int64_t y = y0; y < y1;) {
            float* targets[kOutBlock];
            for (int o = 0; o < kOutBlock; ++o)
              targets[o] = b * kOutBlock + o < g.og ? out + ((n * g.o + o0 + o) * g.ho + y) * g.wo : nullptr;
            const float* first = rows.data() + group * g.cg * plane + (y - y0) * pitch;
            if (y + R <= y1) {
              forward_tile_kw<kOutBlock, XT, R>(g, first, plane, pitch, weights, block_bias, targets);
              y += R;
            } else {
              forward_tile_kw<kOutBlock, XT, 1>(g, first, plane, pitch, weights, block_bias, targets);
              y += 1;
            }
          }
        }
      }
    }
  };
  const int64_t first_item = items * part / parts, last_item = items * (part + 1) / parts;
  if (threaded)
    ember_parallel::run(first_item, last_item, 1, run_items);
  else
    run_items(first_item, last_item);
}

using Array = py::array_t<float, py::array::c_style>;

// out (N, O, Ho, Wo) = the stride-1 convolution of x (N, C, H, W) by w (O, C/groups, kh, kw), plus
// bias (O,) when given: part ``part`` of ``parts`` of it, split further over the thread pool's
// ``threads`` threads when that is above 1.
void forward(const Array& x, const Array& w, const py::object& bias, Array& out, int64_t ph, int64_t pw, int64_t dh,
             int64_t dw, int64_t groups, int64_t part, int64_t parts, int64_t threads) {
  const Geometry g = geometry(x.request(), w.request(), ph, pw, dh, dw, groups);
  check_shape(out.request(), {g.n, g.o, g.ho, g.wo}, "the output");
  check_part(part, parts);
  check_threads(threads);
  const float* b = nullptr;
  Array bias_array;
  if (!bias.is_none()) {
    bias_array = bias.cast<Array>();
    check_shape(bias_array.request(), {g.o}, "the bias");
    b = bias_array.data();
  }
  // Weights as [group][block][c][i][j][kOutBlock], zero past the group's last output channel.
  const int64_t blocks = (g.og + kOutBlock - 1) / kOutBlock;
  const int64_t taps = g.cg * g.kh * g.kw;
  std::vector<float> packed(static_cast<size_t>(g.groups * blocks * taps * kOutBlock), 0.0f);
  std::vector<float> packed_bias(static_cast<size_t>(g.groups * blocks * kOutBlock), 0.0f);
  const float* weight = w.data();
  for (int64_t group = 0; group < g.groups; ++group)
    for (int64_t o = 0; o < g.og; ++o) {
      const int64_t block = group * blocks + o / kOutBlock, lane = o % kOutBlock;
      for (int64_t t = 0; t < taps; ++t)
        packed[(block * taps + t) * kOutBlock + lane] = weight[(group * g.og + o) * taps + t];
      if (b) packed_bias[block * kOutBlock + lane] = b[group * g.og + o];
    }
  const float* xs = x.data();
  float* os = out.mutable_data();
  py::gil_scoped_release release;
  const int64_t splits = parts * threads;
  if (g.wo <= Vec::size)
    forward_all<1>(g, xs, packed.data(), packed_bias.data(), os, part, parts, splits, threads > 1);
  else
    forward_all<2>(g, xs, packed.data(), packed_bias.data(), os, part, parts, splits, threads > 1);
}

// -- weight gradient -----------------------------------------------------------------------------

// The sixteen lanes' sum, as a fixed tree.
float lane_sum(const float* s) {
  float t[8];
  for (int k = 0; k < 8; ++k) t[k] = s[k] + s[k + 8];
  for (int k = 0; k < 4; ++k) t[k] = t[k] + t[k + 4];
  return (t[0] + t[2]) + (t[1] + t[3]);
}

// Some images' share of dW for OB output channels and NT (input channel, tap) pairs: ``lanes`` (OB x
// NT x 16 partial sums, in memory between calls) gains the products of ``grads`` (the OB channels'
// planes of the first image's output gradient, rows of ``gpitch``, images ``gimage`` apart) and
// ``input`` (padded planes, ``plane`` apart per image, rows of ``pitch``; ``offsets`` in per pair).
// The gradient rows are zero from the output's last column to a multiple of 16.
template <int OB, int NT>
__attribute__((noinline)) void weight_tile(const Geometry& g, int64_t images, const float* input, int64_t plane, int64_t pitch,
                 const float* const* grads, int64_t gimage, int64_t gpitch, const int64_t* offsets, float* lanes) {
  typename Vec::T acc[OB][NT][kParts];
  for (int o = 0; o < OB; ++o)
    for (int t = 0; t < NT; ++t)
      for (int p = 0; p < kParts; ++p) acc[o][t][p] = Vec::load(lanes + ((o * NT + t) * kLanes + p * Vec::size));
  const int64_t full = g.wo / kLanes * kLanes, tail = g.wo - full;
  // Lanes past the output's last column: zero gradients times inputs masked to zero (an input there
  // may be inf, and inf * 0 is NaN).
  uint32_t mask[kLanes];
  for (int k = 0; k < kLanes; ++k) mask[k] = k < tail ? 0xFFFFFFFFu : 0u;
  for (int64_t image = 0; image < images; ++image) {
    for (int64_t y = 0; y < g.ho; ++y) {
      const float* in_row = input + image * plane + y * pitch;
      const int64_t row = image * gimage + y * gpitch;
      for (int64_t x0 = 0; x0 < full; x0 += kLanes) {
        typename Vec::T gv[OB][kParts];
        for (int o = 0; o < OB; ++o)
          for (int p = 0; p < kParts; ++p) gv[o][p] = Vec::load(grads[o] + row + x0 + p * Vec::size);
        for (int t = 0; t < NT; ++t)
          for (int p = 0; p < kParts; ++p) {
            const typename Vec::T v = Vec::load_once(in_row + offsets[t] + x0 + p * Vec::size);
            for (int o = 0; o < OB; ++o) acc[o][t][p] = Vec::fma(gv[o][p], v, acc[o][t][p]);
          }
      }
      if (tail) {
        typename Vec::T gv[OB][kParts];
        for (int o = 0; o < OB; ++o)
          for (int p = 0; p < kParts; ++p) gv[o][p] = Vec::load(grads[o] + row + full + p * Vec::size);
        for (int t = 0; t < NT; ++t)
          for (int p = 0; p < kParts; ++p) {
            const typename Vec::T v =
                Vec::keep(Vec::load_once(in_row + offsets[t] + full + p * Vec::size), mask + p * Vec::size);
            for (int o = 0; o < OB; ++o) acc[o][t][p] = Vec::fma(gv[o][p], v, acc[o][t][p]);
          }
      }
    }
  }
  for (int o = 0; o < OB; ++o)
    for (int t = 0; t < NT; ++t)
      for (int p = 0; p < kParts; ++p) Vec::store(lanes + ((o * NT + t) * kLanes + p * Vec::size), acc[o][t][p]);
}

// weight_tile with NT = nt, for nt from 1 to K (the tap count is a template argument so that the
// accumulators stay in registers).
template <int OB, int K = kGradTaps, typename... Args>
void weight_taps(int nt, const Args&... args) {
  if (nt == K) return weight_tile<OB, K>(args...);
  if constexpr (K > 1) return weight_taps<OB, K - 1>(nt, args...);
  throw std::logic_error("conv2d weight gradient: a tile's tap count out of range");
}

// out (O, C/groups, kh, kw) = d(loss)/d(weight) of the stride-1 convolution of x (N, C, H, W) whose
// output gradient is grad (N, O, Ho, Wo).
//
// A group's weight gradient is a product over positions of its Og output channels by its Cg*kh*kw
// (input channel, tap) pairs. Items are runs of kGradTaps consecutive pairs (six taps of a 3x3
// kernel's channel or of two channels, six channels of a 1x1 kernel); a unit is an item's block of kGradBlock output channels,
// and a part owns a run of units (so that a layer of few input channels, three items, still splits
// evenly), which it cuts into a couple of pieces for each of the pool's ``threads``. A piece walks the
// images in order, a few at a time, padding the channels its items read and running its units over
// them: the images' gradient stays in cache for all of the piece's units. The partial sums wait in
// memory between calls, so each output's order is the images', then rows', then columns', whichever
// part, piece or thread computes it.
void weight_grad(const Array& x, const Array& grad, Array& out, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                 int64_t groups, int64_t part, int64_t parts, int64_t threads) {
  const py::buffer_info ob = out.request();
  if (ob.ndim != 4) throw std::invalid_argument("conv2d weight gradient: the output must be 4-D");
  const Geometry g = geometry(x.request(), ob, ph, pw, dh, dw, groups);
  check_shape(grad.request(), {g.n, g.o, g.ho, g.wo}, "the output gradient");
  check_part(part, parts);
  check_threads(threads);
  const int64_t gpitch = round_up(g.wo, kLanes);
  const int64_t pitch = gpitch + (g.kw - 1) * g.dw;
  const int64_t rows = g.ho + (g.kh - 1) * g.dh;
  const int64_t plane = rows * pitch, gimage = g.o * g.ho * gpitch;
  // Images per pass: their output gradient within about 1 MiB.
  const int64_t batch = std::clamp<int64_t>((1 << 18) / std::max<int64_t>(gimage, 1), 1, g.n);
  const int64_t taps = g.kh * g.kw, pairs = g.cg * taps;
  std::vector<int64_t> tap_offsets(static_cast<size_t>(taps));
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) tap_offsets[i * g.kw + j] = i * g.dh * pitch + j * g.dw;
  const float* xs = x.data();
  const float* gs = grad.data();
  float* result = out.mutable_data();
  const int64_t blocks = (g.og + kGradBlock - 1) / kGradBlock;
  const int64_t chunks = (pairs + kGradTaps - 1) / kGradTaps;  // items per group
  const int64_t units = g.groups * chunks * blocks;
  const int64_t first_unit = units * part / parts, last_unit = units * (part + 1) / parts;
  if (first_unit == last_unit) return;
  const int64_t span = std::min<int64_t>(g.cg, (kGradTaps - 1) / taps + 2);  // channels an item reads
  const int64_t tile_lanes = kGradBlock * kGradTaps * kLanes;  // one unit's partial sums
  const int64_t channel_stride = batch * plane;
  py::gil_scoped_release release;
  // The units [unit_lo, unit_hi) a few at a time, so that their partial sums stay within about 8 MiB
  // (a wide layer's would take hundreds); each unit's sums still run over every image in order.
  const int64_t wave = std::max<int64_t>(1, (int64_t{2} << 20) / tile_lanes);
  auto run_units = [&](int64_t unit_lo, int64_t unit_hi) {
    std::vector<float> sums(static_cast<size_t>(std::min(wave, unit_hi - unit_lo) * tile_lanes));
    std::vector<float> planes(static_cast<size_t>(span * channel_stride));
    std::vector<int64_t> slot_channel(static_cast<size_t>(span));
    // The batch's output gradient, rows zero-padded to a multiple of 16 columns, for the wave's groups
    // (unless the rows are already such a multiple).
    std::vector<float> padded_grad(gpitch == g.wo ? 0 : static_cast<size_t>(batch * gimage));
    int64_t offsets[kGradTaps];
    for (int64_t lo = unit_lo; lo < unit_hi; lo += wave) {
      const int64_t hi = std::min(unit_hi, lo + wave);
      const int64_t item_lo = lo / blocks, item_hi = (hi - 1) / blocks + 1;
      std::fill(sums.begin(), sums.end(), 0.0f);
      const int64_t o_first = item_lo / chunks * g.og, o_last = ((item_hi - 1) / chunks + 1) * g.og;
      for (int64_t n0 = 0; n0 < g.n; n0 += batch) {
        const int64_t count = std::min(batch, g.n - n0);
        const float* gbatch = gs + n0 * gimage;
        if (!padded_grad.empty()) {
          for (int64_t k = 0; k < count; ++k)
            for (int64_t r = o_first * g.ho; r < o_last * g.ho; ++r) {
              float* row = padded_grad.data() + k * gimage + r * gpitch;
              std::memcpy(row, gs + ((n0 + k) * g.o * g.ho + r) * g.wo, sizeof(float) * g.wo);
              std::fill(row + g.wo, row + gpitch, 0.0f);
            }
          gbatch = padded_grad.data();
        }
        // Channel c's padded planes sit in slot c % span, kept while the next items read it (an item of
        // six pairs of a 3x3 kernel shares a channel with the item before it).
        std::fill(slot_channel.begin(), slot_channel.end(), int64_t{-1});
        for (int64_t item = item_lo; item < item_hi; ++item) {
          const int64_t group = item / chunks, first = item % chunks * kGradTaps;
          const int nt = static_cast<int>(std::min<int64_t>(kGradTaps, pairs - first));
          const int64_t c_first = group * g.cg + first / taps, c_last = group * g.cg + (first + nt - 1) / taps;
          for (int64_t c = c_first; c <= c_last; ++c) {
            const int64_t slot = c % span;
            if (slot_channel[slot] == c) continue;
            for (int64_t k = 0; k < count; ++k)
              pad_rows(xs + ((n0 + k) * g.c + c) * g.h * g.w, g.h, g.w, 0, rows, g.ph, g.pw,
                       planes.data() + slot * channel_stride + k * plane, pitch);
            slot_channel[slot] = c;
          }
          for (int t = 0; t < nt; ++t) {
            const int64_t q = first + t;
            offsets[t] = (group * g.cg + q / taps) % span * channel_stride + tap_offsets[q % taps];
          }
          const int64_t b_first = std::max(lo, item * blocks) - item * blocks;
          const int64_t b_last = std::min(hi, (item + 1) * blocks) - item * blocks;
          for (int64_t b = b_first; b < b_last; ++b) {
            const float* grads[kGradBlock];
            for (int o = 0; o < kGradBlock; ++o) {
              // A block past the group's last channel repeats it; those sums are never read.
              const int64_t channel = group * g.og + std::min(b * kGradBlock + o, g.og - 1);
              grads[o] = gbatch + channel * g.ho * gpitch;
            }
            weight_taps<kGradBlock>(nt, g, count, static_cast<const float*>(planes.data()), plane, pitch,
                                    static_cast<const float* const*>(grads), gimage, gpitch,
                                    static_cast<const int64_t*>(offsets),
                                    sums.data() + (item * blocks + b - lo) * tile_lanes);
          }
        }
      }
      for (int64_t unit = lo; unit < hi; ++unit) {
        const int64_t item = unit / blocks, b = unit % blocks;
        const int64_t group = item / chunks, first = item % chunks * kGradTaps;
        const int64_t nt = std::min<int64_t>(kGradTaps, pairs - first);
        for (int64_t o = 0; o < kGradBlock && b * kGradBlock + o < g.og; ++o)
          for (int64_t t = 0; t < nt; ++t) {
            const float* lanes = sums.data() + (unit - lo) * tile_lanes + (o * nt + t) * kLanes;
            result[(group * g.og + b * kGradBlock + o) * pairs + first + t] = lane_sum(lanes);
          }
      }
    }
  };
  // Two pieces a thread: a thread that starts late (a worker waking) leaves its second to another.
  if (threads > 1) {
    const int64_t grain = std::max<int64_t>(1, (last_unit - first_unit) / (2 * threads));
    ember_parallel::run(first_unit, last_unit, grain, run_units);
  } else {
    run_units(first_unit, last_unit);
  }
}

// -- per-channel sums -----------------------------------------------------------------------------

// out (C,) = x (N, C, S) summed over N and S: a convolution's bias gradient, batch norm's mean. An
// image's plane is summed in sixteen float32 lanes (lane k takes the positions k modulo 16), which
// are added to sixteen float64 lanes, image after image; those are added as a fixed tree and rounded
// once. No BLAS call (a matrix-vector product woke BLAS's threads, whose spinning then slowed the
// next kernels); the same bits on every machine; channels spread over the thread pool when
// ``threads`` is above 1.
void channel_sums(const Array& x, Array& out, int64_t threads) {
  const py::buffer_info xb = x.request();
  if (xb.ndim != 3) throw std::invalid_argument("channel_sums: x must be 3-D (N, C, S)");
  const int64_t n = xb.shape[0], c = xb.shape[1], size = xb.shape[2];
  check_shape(out.request(), {c}, "the sums");
  check_threads(threads);
  const float* xs = x.data();
  float* sums = out.mutable_data();
  py::gil_scoped_release release;
  auto run_channels = [&](int64_t first, int64_t last) {
    for (int64_t ch = first; ch < last; ++ch) {
      double lanes[kLanes] = {};
      const typename Vec::T one = Vec::splat(1.0f);
      for (int64_t image = 0; image < n; ++image) {
        const float* plane = xs + (image * c + ch) * size;
        typename Vec::T acc[kParts];
        for (int p = 0; p < kParts; ++p) acc[p] = Vec::splat(0.0f);
        int64_t i = 0;
        for (; i + kLanes <= size; i += kLanes)
          for (int p = 0; p < kParts; ++p) acc[p] = Vec::fma(one, Vec::load(plane + i + p * Vec::size), acc[p]);
        float image_lanes[kLanes];
        for (int p = 0; p < kParts; ++p) Vec::store(image_lanes + p * Vec::size, acc[p]);
        for (int k = 0; i + k < size; ++k) image_lanes[k] += plane[i + k];
        for (int k = 0; k < kLanes; ++k) lanes[k] += image_lanes[k];
      }
      for (int width = kLanes / 2; width > 0; width /= 2)
        for (int k = 0; k < width; ++k) lanes[k] += lanes[k + width];
      sums[ch] = static_cast<float>(lanes[0]);
    }
  };
  if (threads > 1)
    ember_parallel::run(0, c, 1, run_channels);
  else
    run_channels(0, c);
}

}  // namespace

PYBIND11_MODULE(_conv, m) {
  m.doc() = "Direct stride-1 2-D convolutions of float32 NCHW arrays (forward and weight gradient)";
  m.def("forward", &forward, py::arg("x"), py::arg("w"), py::arg("bias"), py::arg("out").noconvert(), py::arg("ph"),
        py::arg("pw"), py::arg("dh"), py::arg("dw"), py::arg("groups"), py::arg("part"), py::arg("parts"),
        py::arg("threads") = 1);
  m.def("weight_grad", &weight_grad, py::arg("x"), py::arg("grad"), py::arg("out").noconvert(), py::arg("ph"), py::arg("pw"),
        py::arg("dh"), py::arg("dw"), py::arg("groups"), py::arg("part"), py::arg("parts"), py::arg("threads") = 1);
  m.def("channel_sums", &channel_sums, py::arg("x"), py::arg("out").noconvert(), py::arg("threads") = 1);
  m.attr("lanes") = Vec::size;
  ember_parallel::load();
}
