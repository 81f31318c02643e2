// Ember's thread pool (ember.core._parallel, pool.cpp) for the core's other extension modules.
//
// A module calls ember_parallel::load() from its init, then ember_parallel::run(begin, end, grain, f)
// with the GIL released: f(b, e) runs over pieces of [begin, end) (each at least `grain` long) on the
// pool's workers and the calling thread, which returns when every piece is done. The pieces are
// claimed in turn by whichever thread is free, so a piece must not depend on which thread runs it.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <mutex>

namespace ember_parallel {

typedef void (*task_fn)(void* ctx, int64_t begin, int64_t end);
typedef void (*parallel_for_fn)(int64_t begin, int64_t end, int64_t grain, task_fn fn, void* ctx);

inline parallel_for_fn& entry() {
  static parallel_for_fn fn = nullptr;
  return fn;
}

// The pool's entry point, from the capsule of ember.core._parallel (call with the GIL held).
inline void load() {
  auto capsule = pybind11::module_::import("ember.core._parallel").attr("parallel_for").cast<pybind11::capsule>();
  entry() = reinterpret_cast<parallel_for_fn>(capsule.get_pointer());
}

// f(b, e) over pieces of [begin, end). An exception thrown by a piece is thrown here, after every
// piece has finished (a worker thread must not unwind into the pool).
template <typename F>
void run(int64_t begin, int64_t end, int64_t grain, const F& f) {
  parallel_for_fn pool = entry();
  if (pool == nullptr || end - begin <= grain) {
    f(begin, end);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  auto guarded = [&](int64_t b, int64_t e) {
    try {
      f(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  using G = decltype(guarded);
  pool(begin, end, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<G*>(ctx))(b, e); }, &guarded);
  if (error) std::rethrow_exception(error);
}

}  // namespace ember_parallel
