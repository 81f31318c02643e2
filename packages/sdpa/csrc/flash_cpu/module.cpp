// The Python binding of the CPU FlashAttention-2 kernel: ember.sdpa.kernels._flash_cpu. The Python
// entry (flash_cpu.py) has already checked shapes, dtypes, strides and writability; this layer
// reads each array's pointer and element strides, picks the template for the storage dtype, and
// runs the kernel without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "backward.h"
#include "forward.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace py = pybind11;

namespace {

template <typename T>
flash::View4<T> view4(const py::array& a) {
  const auto item = static_cast<int64_t>(a.itemsize());
  T* data = static_cast<T*>(const_cast<void*>(a.data()));
  return {data, a.strides(0) / item, a.strides(1) / item, a.strides(2) / item, a.strides(3) / item};
}

template <typename E>
flash::View3<E> view3(const py::array& a) {
  constexpr auto item = static_cast<int64_t>(sizeof(E));
  E* data = static_cast<E*>(const_cast<void*>(a.data()));
  return {data, a.strides(0) / item, a.strides(1) / item, a.strides(2) / item};
}

struct MaskArg {
  const void* data = nullptr;
  int64_t strides[4] = {0, 0, 0, 0};
};

MaskArg mask_arg(const py::object& mask) {
  MaskArg m;
  if (mask.is_none()) return m;
  const py::array a = mask.cast<py::array>();
  m.data = a.data();
  for (int i = 0; i < 4; ++i) m.strides[i] = a.strides(i) / static_cast<int64_t>(a.itemsize());
  return m;
}

flash::Options options(const py::array& q, const py::array& k, const std::string& mask_kind, bool causal,
                       double scale, double dropout_p, uint64_t seed, uint64_t offset) {
  flash::Options o;
  o.B = q.shape(0);
  o.Hq = q.shape(1);
  o.Sq = q.shape(2);
  o.D = q.shape(3);
  o.Hkv = k.shape(1);
  o.Skv = k.shape(2);
  o.scale = scale;
  o.causal = causal;
  o.mask_kind = mask_kind == "bool"    ? flash::MaskKind::boolean
                : mask_kind == "float" ? flash::MaskKind::additive
                                       : flash::MaskKind::none;
  o.dropout_p = dropout_p;
  o.seed = seed;
  o.offset = offset;
  return o;
}

// Views are read while the GIL is held (they touch Python objects); the kernel runs without it.
// E is the log-sum-exp's element type: float, or double beside double inputs.
template <typename T, typename C, typename E = float>
void run_forward(const flash::Options& o, const py::array& q, const py::array& k, const py::array& v,
                 const py::array& out, const py::array& lse, const MaskArg& m) {
  const auto vq = view4<const T>(q), vk = view4<const T>(k), vv = view4<const T>(v);
  const auto vo = view4<T>(out);
  const auto vl = view3<E>(lse);
  py::gil_scoped_release release;
  flash::forward<T, C, E>(o, vq, vk, vv, vo, vl, m.data, m.strides);
}

template <typename T, typename C, typename E = float>
void run_backward(const flash::Options& o, const py::array& dout, const py::array& q, const py::array& k,
                  const py::array& v, const py::array& out, const py::array& lse, const py::array& dq,
                  const py::array& dk, const py::array& dv, const MaskArg& m) {
  const auto vdo = view4<const T>(dout), vq = view4<const T>(q), vk = view4<const T>(k), vv = view4<const T>(v),
             vo = view4<const T>(out);
  const auto vdq = view4<T>(dq), vdk = view4<T>(dk), vdv = view4<T>(dv);
  const auto vl = view3<E>(lse);
  py::gil_scoped_release release;
  flash::backward<T, C, E>(o, vdo, vq, vk, vv, vo, vl, vdq, vdk, vdv, m.data, m.strides);
}

void forward(py::array q, py::array k, py::array v, py::array out, py::array lse, py::object mask,
             const std::string& mask_kind, bool causal, double scale, double dropout_p, uint64_t seed,
             uint64_t offset, const std::string& dtype) {
  const flash::Options o = options(q, k, mask_kind, causal, scale, dropout_p, seed, offset);
  const MaskArg m = mask_arg(mask);
  if (dtype == "float32") run_forward<float, float>(o, q, k, v, out, lse, m);
  else if (dtype == "float64" && lse.itemsize() == 8) run_forward<double, double, double>(o, q, k, v, out, lse, m);
  else if (dtype == "float64") run_forward<double, double>(o, q, k, v, out, lse, m);
  else if (dtype == "float16") run_forward<flash::f16, float>(o, q, k, v, out, lse, m);
  else if (dtype == "bfloat16") run_forward<flash::bf16, float>(o, q, k, v, out, lse, m);
  else throw std::invalid_argument("flash_cpu: unsupported dtype " + dtype);
}

void backward(py::array dout, py::array q, py::array k, py::array v, py::array out, py::array lse, py::array dq,
              py::array dk, py::array dv, py::object mask, const std::string& mask_kind, bool causal, double scale,
              double dropout_p, uint64_t seed, uint64_t offset, const std::string& dtype) {
  const flash::Options o = options(q, k, mask_kind, causal, scale, dropout_p, seed, offset);
  const MaskArg m = mask_arg(mask);
  if (dtype == "float32") run_backward<float, float>(o, dout, q, k, v, out, lse, dq, dk, dv, m);
  else if (dtype == "float64" && lse.itemsize() == 8)
    run_backward<double, double, double>(o, dout, q, k, v, out, lse, dq, dk, dv, m);
  else if (dtype == "float64") run_backward<double, double>(o, dout, q, k, v, out, lse, dq, dk, dv, m);
  else if (dtype == "float16") run_backward<flash::f16, float>(o, dout, q, k, v, out, lse, dq, dk, dv, m);
  else if (dtype == "bfloat16") run_backward<flash::bf16, float>(o, dout, q, k, v, out, lse, dq, dk, dv, m);
  else throw std::invalid_argument("flash_cpu: unsupported dtype " + dtype);
}

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace

PYBIND11_MODULE(_flash_cpu, mod) {
  mod.doc() = "CPU FlashAttention-2 forward and backward on strided NumPy arrays (see flash_cpu.py).";
  mod.def("forward", &forward);
  mod.def("backward", &backward);
  mod.def("max_threads", &max_threads, "OpenMP threads the kernels use (1 when built without OpenMP).");
  mod.attr("vector_bytes") = flash::kVectorBytes;
#ifdef _OPENMP
  mod.attr("openmp") = true;
#else
  mod.attr("openmp") = false;
#endif
}
