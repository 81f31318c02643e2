// Philox 4x32-10 over an array of 64-bit counters: the compiled twin of ember/core/philox.py.
//
// Each offset o gives the counter (o & 0xFFFFFFFF, o >> 32, 0, 0) under the key (seed lo, seed hi);
// the four output words go to four separate uint32 arrays, as philox.randint4x returns them. The
// loop holds no state between elements and runs with the GIL released, so philox.py splits a long
// draw into pieces that Ember's CPU threads run at once.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>

namespace py = pybind11;

namespace {

constexpr uint32_t kKeyA = 0x9E3779B9u, kKeyB = 0xBB67AE85u;
constexpr uint64_t kRoundA = 0xD2511F53u, kRoundB = 0xCD9E8D57u;

inline void philox(uint32_t k0, uint32_t k1, uint64_t offset, uint32_t* w) {
  uint32_t c0 = static_cast<uint32_t>(offset), c1 = static_cast<uint32_t>(offset >> 32), c2 = 0, c3 = 0;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = kRoundA * c0, p2 = kRoundB * c2;
    c0 = static_cast<uint32_t>(p2 >> 32) ^ c1 ^ k0;
    c1 = static_cast<uint32_t>(p2);
    c2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c3 = static_cast<uint32_t>(p0);
    k0 += kKeyA;
    k1 += kKeyB;
  }
  w[0] = c0, w[1] = c1, w[2] = c2, w[3] = c3;
}

using Words = py::array_t<uint32_t, py::array::c_style>;
using Offsets = py::array_t<uint64_t, py::array::c_style>;

void randint4x(uint64_t seed, const Offsets& offsets, Words& w0, Words& w1, Words& w2, Words& w3) {
  const py::ssize_t n = offsets.size();
  for (const Words* w : {&w0, &w1, &w2, &w3})
    if (w->size() != n) throw std::invalid_argument("randint4x: every output needs one word per offset");
  const uint64_t* in = offsets.data();
  uint32_t *o0 = w0.mutable_data(), *o1 = w1.mutable_data(), *o2 = w2.mutable_data(), *o3 = w3.mutable_data();
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  py::gil_scoped_release release;
  for (py::ssize_t i = 0; i < n; ++i) {
    uint32_t w[4];
    philox(k0, k1, in[i], w);
    o0[i] = w[0], o1[i] = w[1], o2[i] = w[2], o3[i] = w[3];
  }
}

// Triton's uint_to_uniform_float of word 0 for counters offset, offset + 1, ... (wrapping at 2**64):
// the int32 view, negatives bit-flipped, times 4.6566127342e-10 in float32 (one rounding, as NumPy).
void rand_range(uint64_t seed, uint64_t offset, py::array_t<float, py::array::c_style>& out) {
  const py::ssize_t n = out.size();
  float* o = out.mutable_data();
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  py::gil_scoped_release release;
  for (py::ssize_t i = 0; i < n; ++i) {
    uint32_t w[4];
    philox(k0, k1, offset + static_cast<uint64_t>(i), w);
    const int32_t x = static_cast<int32_t>(w[0]);
    o[i] = static_cast<float>(x < 0 ? ~x : x) * 4.6566127342e-10f;
  }
}

}  // namespace

PYBIND11_MODULE(_philox, m) {
  m.doc() = "Philox 4x32-10 words for arrays of 64-bit counters (see ember/core/philox.py)";
  m.def("randint4x", &randint4x, py::arg("seed"), py::arg("offsets").noconvert(), py::arg("w0").noconvert(),
        py::arg("w1").noconvert(), py::arg("w2").noconvert(), py::arg("w3").noconvert(),
        "Fills w0..w3 (uint32, C-contiguous, one per offset) with the Philox words of each uint64 offset.");
  m.def("rand_range", &rand_range, py::arg("seed"), py::arg("offset"), py::arg("out").noconvert(),
        "Fills out (float32, C-contiguous) with philox.rand for counters offset, offset + 1, ...");
}
