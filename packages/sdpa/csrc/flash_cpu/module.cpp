// The Python binding of the CPU FlashAttention-2 kernel: ember.sdpa.kernels._flash_cpu. The Python
// entry (flash_cpu.py) has already checked shapes, dtypes, strides and writability; this layer
// reads each array's pointer and element strides, picks the template for the storage dtype, and
// runs the kernel without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "backward.h"
#include "forward.h"

namespace py = pybind11;

namespace {

// An array's address and element strides, read with the GIL held; typed by view4 and view3 later.
struct Raw {
  void* data;
  int64_t strides[4];
};

Raw raw(const py::array& a) {
  Raw r{const_cast<void*>(a.data()), {0, 0, 0, 0}};
  for (py::ssize_t i = 0; i < a.ndim() && i < 4; ++i) r.strides[i] = a.strides(i) / static_cast<int64_t>(a.itemsize());
  return r;
}

template <typename T>
flash::View4<T> view4(const Raw& a) {
  return {static_cast<T*>(a.data), a.strides[0], a.strides[1], a.strides[2], a.strides[3]};
}

template <typename E>
flash::View3<E> view3(const Raw& a) {
  return {static_cast<E*>(a.data), a.strides[0], a.strides[1], a.strides[2]};
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

// One call of the forward: the arrays' views are read at construction, while the GIL is held (they
// touch Python objects); `run` computes without it, claiming tasks from the call's counter, and may
// be called from several threads at once (Ember's CPU threads run one part each). The call holds
// its arrays, so they outlive every part.
class ForwardCall {
 public:
  ForwardCall(py::array q, py::array k, py::array v, py::array out, py::array lse, py::object mask,
              const std::string& mask_kind, bool causal, double scale, double dropout_p, uint64_t seed,
              uint64_t offset, const std::string& dtype)
      : arrays_{q, k, v, out, lse}, raws_{raw(q), raw(k), raw(v), raw(out), raw(lse)}, mask_obj_(mask),
        o_(options(q, k, mask_kind, causal, scale, dropout_p, seed, offset)), m_(mask_arg(mask)) {
    if (dtype == "float32") run_ = &ForwardCall::typed<float, float>;
    else if (dtype == "float64" && lse.itemsize() == 8) run_ = &ForwardCall::typed<double, double, double>;
    else if (dtype == "float64") run_ = &ForwardCall::typed<double, double>;
    else if (dtype == "float16") run_ = &ForwardCall::typed<flash::f16, float>;
    else if (dtype == "bfloat16") run_ = &ForwardCall::typed<flash::bf16, float>;
    else throw std::invalid_argument("flash_cpu: unsupported dtype " + dtype);
  }

  int64_t tasks() const { return flash::forward_tasks(o_); }

  void run() {
    py::gil_scoped_release release;
    (this->*run_)();
  }

 private:
  template <typename T, typename C, typename E = float>
  void typed() {
    const auto& a = raws_;
    flash::forward<T, C, E>(o_, view4<const T>(a[0]), view4<const T>(a[1]), view4<const T>(a[2]), view4<T>(a[3]),
                            view3<E>(a[4]), m_.data, m_.strides, next_);
  }

  std::vector<py::array> arrays_;
  std::vector<Raw> raws_;
  py::object mask_obj_;
  flash::Options o_;
  MaskArg m_;
  flash::TaskCounter next_;
  void (ForwardCall::*run_)() = nullptr;
};

// One call of the backward, run as the forward's is: `run` by every part, then, when `needs_finish`,
// `finish` by every part (it sums the split tasks' dQ partials).
class BackwardCall {
 public:
  BackwardCall(py::array dout, py::array q, py::array k, py::array v, py::array out, py::array lse, py::array dq,
               py::array dk, py::array dv, py::object mask, const std::string& mask_kind, bool causal, double scale,
               double dropout_p, uint64_t seed, uint64_t offset, const std::string& dtype)
      : arrays_{dout, q, k, v, out, lse, dq, dk, dv},
        raws_{raw(dout), raw(q), raw(k), raw(v), raw(out), raw(lse), raw(dq), raw(dk), raw(dv)}, mask_obj_(mask),
        o_(options(q, k, mask_kind, causal, scale, dropout_p, seed, offset)), m_(mask_arg(mask)) {
    if (dtype == "float32") init<float, float>();
    else if (dtype == "float64" && lse.itemsize() == 8) init<double, double, double>();
    else if (dtype == "float64") init<double, double>();
    else if (dtype == "float16") init<flash::f16, float>();
    else if (dtype == "bfloat16") init<flash::bf16, float>();
    else throw std::invalid_argument("flash_cpu: unsupported dtype " + dtype);
  }

  int64_t tasks() const { return tasks_; }
  bool needs_finish() const { return !partials_.empty(); }

  void run() {
    py::gil_scoped_release release;
    (this->*run_)();
  }

  void finish() {
    py::gil_scoped_release release;
    (this->*finish_)();
  }

 private:
  template <typename T, typename C, typename E = float>
  void init() {
    tasks_ = flash::backward_tasks<C>(o_);
    partials_.resize(static_cast<size_t>(flash::backward_partials<C>(o_)) * sizeof(C));
    run_ = &BackwardCall::typed_run<T, C, E>;
    finish_ = &BackwardCall::typed_finish<T, C>;
  }

  template <typename C>
  C* partials() {
    return reinterpret_cast<C*>(partials_.data());
  }

  template <typename T, typename C, typename E>
  void typed_run() {
    const auto& a = raws_;
    flash::backward<T, C, E>(o_, view4<const T>(a[0]), view4<const T>(a[1]), view4<const T>(a[2]),
                             view4<const T>(a[3]), view4<const T>(a[4]), view3<E>(a[5]), view4<T>(a[6]),
                             view4<T>(a[7]), view4<T>(a[8]), m_.data, m_.strides, next_, partials<C>());
  }

  template <typename T, typename C>
  void typed_finish() {
    flash::backward_finish<T, C>(o_, view4<T>(raws_[6]), partials<C>(), finish_next_);
  }

  std::vector<py::array> arrays_;
  std::vector<Raw> raws_;
  py::object mask_obj_;
  flash::Options o_;
  MaskArg m_;
  int64_t tasks_ = 0;
  std::vector<char> partials_;
  flash::TaskCounter next_, finish_next_;
  void (BackwardCall::*run_)() = nullptr;
  void (BackwardCall::*finish_)() = nullptr;
};

}  // namespace

PYBIND11_MODULE(_flash_cpu, mod) {
  mod.doc() = "CPU FlashAttention-2 forward and backward on strided NumPy arrays (see flash_cpu.py).";
  py::class_<ForwardCall>(mod, "ForwardCall")
      .def(py::init<py::array, py::array, py::array, py::array, py::array, py::object, const std::string&, bool,
                    double, double, uint64_t, uint64_t, const std::string&>())
      .def_property_readonly("tasks", &ForwardCall::tasks)
      .def("run", &ForwardCall::run);
  py::class_<BackwardCall>(mod, "BackwardCall")
      .def(py::init<py::array, py::array, py::array, py::array, py::array, py::array, py::array, py::array,
                    py::array, py::object, const std::string&, bool, double, double, uint64_t, uint64_t,
                    const std::string&>())
      .def_property_readonly("tasks", &BackwardCall::tasks)
      .def_property_readonly("needs_finish", &BackwardCall::needs_finish)
      .def("run", &BackwardCall::run)
      .def("finish", &BackwardCall::finish);
  mod.attr("vector_bytes") = flash::kVectorBytes;
}
