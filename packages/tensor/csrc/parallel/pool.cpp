// ember.core._parallel: the thread pool that the direct convolutions, the per-channel sums and the
// code generator's parallel loops run their pieces on. One pool for all of them, so that the workers
// a kernel woke are still spinning when the next kernel of a step starts, whichever module it comes
// from.
//
// Workers spin briefly after a job (so the next kernel in a sequence of kernels starts at once)
// and then sleep on a condition variable, so they leave the cores to the BLAS threads of the GEMMs
// that run between kernels. The calling thread takes pieces of its own job, and it takes the
// pieces no worker has claimed yet: a job never waits for a sleeping worker to wake up.
//
// A job is published as a pointer to a descriptor on the caller's stack. A worker announces
// itself in `users` before it reads the pointer, and the caller waits for `users` to drop to zero
// after it withdrew the pointer, so no worker touches a finished job's memory.
//
// Other extension modules reach ``ember_parallel_for`` through the capsule ``parallel_for`` of this
// module (parallel.h); generated kernels through its address (``entry_point()``), handed to each
// library when it is loaded.
#include <pybind11/pybind11.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#elif defined(__aarch64__)
static inline void cpu_relax() { asm volatile("yield"); }
#else
static inline void cpu_relax() {}
#endif

typedef void (*ember_task_fn)(void* ctx, int64_t begin, int64_t end);

namespace {

// How long an idle worker spins before it sleeps: long enough to catch the next kernel of a
// sequence, short against a GEMM's milliseconds.
std::atomic<int64_t> spin_ns{50000};

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Job {
  ember_task_fn fn;
  void* ctx;
  int64_t begin, end, piece, pieces;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
};

void run_pieces(Job* job) {
  for (;;) {
    int64_t k = job->next.fetch_add(1, std::memory_order_relaxed);
    if (k >= job->pieces) return;
    int64_t b = job->begin + k * job->piece;
    int64_t e = b + job->piece < job->end ? b + job->piece : job->end;
    job->fn(job->ctx, b, e);
    job->done.fetch_add(1, std::memory_order_release);
  }
}

thread_local bool in_worker = false;

struct Pool {
  std::mutex mutex;                 // guards sleeping and waking
  std::condition_variable wake;
  std::mutex caller;                // one job at a time; another caller runs its loop inline
  std::atomic<Job*> current{nullptr};
  std::atomic<uint64_t> generation{0};
  std::atomic<int> sleepers{0};
  std::atomic<int> users{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  int threads = 1;                  // workers + the caller

  void worker_loop() {
    in_worker = true;
    uint64_t seen = generation.load(std::memory_order_acquire);
    for (;;) {
      int64_t until = now_ns() + spin_ns.load(std::memory_order_relaxed);
      int polls = 0;
      while (generation.load(std::memory_order_acquire) == seen && !stop.load(std::memory_order_relaxed)) {
        cpu_relax();
        if (++polls % 64 == 0 && now_ns() > until) {
          std::unique_lock<std::mutex> lock(mutex);
          sleepers.fetch_add(1, std::memory_order_seq_cst);
          while (generation.load(std::memory_order_seq_cst) == seen && !stop.load(std::memory_order_seq_cst))
            wake.wait(lock);
          sleepers.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
      }
      if (stop.load(std::memory_order_acquire)) return;
      seen = generation.load(std::memory_order_acquire);
      users.fetch_add(1, std::memory_order_seq_cst);
      Job* job = current.load(std::memory_order_seq_cst);
      if (job != nullptr) run_pieces(job);
      users.fetch_sub(1, std::memory_order_release);
    }
  }

  void start() {
    stop.store(false);
    for (int i = 1; i < threads; ++i) workers.emplace_back([this] { worker_loop(); });
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop.store(true, std::memory_order_seq_cst);
    }
    wake.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
  }

  void run(int64_t begin, int64_t end, int64_t piece, int64_t pieces, ember_task_fn fn, void* ctx) {
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.begin = begin;
    job.end = end;
    job.piece = piece;
    job.pieces = pieces;
    current.store(&job, std::memory_order_seq_cst);
    generation.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mutex);
      wake.notify_all();
    }
    run_pieces(&job);
    // The pieces workers claimed: spin, then yield the core (the worker may have been preempted).
    int polls = 0;
    while (job.done.load(std::memory_order_acquire) < pieces) {
      if (++polls < 4096) cpu_relax(); else sched_yield();
    }
    current.store(nullptr, std::memory_order_seq_cst);
    while (users.load(std::memory_order_seq_cst) != 0) cpu_relax();
  }
};

Pool* pool = nullptr;        // made on first use; never destroyed while a thread may use it
int wanted_threads = 1;
std::mutex config_mutex;     // guards pool creation and thread-count changes

Pool* get_pool() {
  Pool* p = __atomic_load_n(&pool, __ATOMIC_ACQUIRE);
  if (p != nullptr && p->threads == wanted_threads) return p;
  std::lock_guard<std::mutex> lock(config_mutex);
  if (pool != nullptr && pool->threads != wanted_threads) {
    std::lock_guard<std::mutex> busy(pool->caller);  // wait for a job in flight
    pool->shutdown();
    pool->threads = wanted_threads;
    pool->start();
  }
  if (pool == nullptr) {
    p = new Pool();
    p->threads = wanted_threads;
    p->start();
    __atomic_store_n(&pool, p, __ATOMIC_RELEASE);
  }
  return pool;
}

void after_fork_in_child() {
  // The child has none of the parent's threads: forget them (a std::thread must not be destroyed
  // while joinable, so the vector's storage is leaked) and make a fresh pool on next use. The mutexes
  // may have been held by a parent thread at the fork; they are made anew too.
  if (pool != nullptr) {
    new (&pool->workers) std::vector<std::thread>();
    pool = nullptr;  // the old object is leaked: its mutexes may be locked
  }
  new (&config_mutex) std::mutex();
}

struct AtFork {
  AtFork() { pthread_atfork(nullptr, nullptr, after_fork_in_child); }
} at_fork;

}  // namespace

extern "C" {

// Calls fn(ctx, b, e) over consecutive pieces [b, e) covering [begin, end), each at least `grain`
// long, on the pool's threads and the caller. Returns when every piece is done.
void ember_parallel_for(int64_t begin, int64_t end, int64_t grain, ember_task_fn fn, void* ctx) {
  int64_t n = end - begin;
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int threads = wanted_threads;
  if (threads <= 1 || n <= grain || in_worker) {
    fn(ctx, begin, end);
    return;
  }
  Pool* p = get_pool();
  std::unique_lock<std::mutex> busy(p->caller, std::try_to_lock);
  // Inline when another thread's job is running on the pool, or the pool was just stopped.
  if (!busy.owns_lock() || p->threads <= 1 || int(p->workers.size()) != p->threads - 1) {
    fn(ctx, begin, end);
    return;
  }
  // A few pieces a thread, so a thread slowed down by another process does not hold the rest up.
  int64_t max_pieces = n / grain;  // so that each piece has at least `grain`
  if (max_pieces < 2) {
    fn(ctx, begin, end);
    return;
  }
  int64_t pieces = int64_t(p->threads) * 4 < max_pieces ? int64_t(p->threads) * 4 : max_pieces;
  int64_t piece = (n + pieces - 1) / pieces;
  pieces = (n + piece - 1) / piece;
  bool was = in_worker;
  in_worker = true;  // a nested parallel loop runs inline
  p->run(begin, end, piece, pieces, fn, ctx);
  in_worker = was;
}

// The threads a parallel loop uses, the caller included; the workers of another count are joined
// now, and the pool is made again on its next use.
void ember_parallel_set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(config_mutex);
  wanted_threads = n < 1 ? 1 : n;
  if (pool != nullptr && pool->threads != wanted_threads) {
    std::lock_guard<std::mutex> busy(pool->caller);
    pool->shutdown();
    pool->threads = 0;
  }
}

int ember_parallel_get_num_threads() { return wanted_threads; }

// How long (nanoseconds) an idle worker spins before it sleeps.
void ember_parallel_set_spin_ns(int64_t ns) { spin_ns.store(ns < 0 ? 0 : ns); }

// Joins the workers (at exit); the pool is made again on next use.
void ember_parallel_shutdown() {
  std::lock_guard<std::mutex> lock(config_mutex);
  if (pool != nullptr) {
    std::lock_guard<std::mutex> busy(pool->caller);
    pool->shutdown();
    pool->threads = 0;  // started again, with the wanted count, on next use
  }
}

// The number of worker threads alive (for tests).
int ember_parallel_worker_count() {
  std::lock_guard<std::mutex> lock(config_mutex);
  return pool == nullptr ? 0 : int(pool->workers.size());
}

}

namespace py = pybind11;

PYBIND11_MODULE(_parallel, m) {
  m.doc() = "The thread pool of Ember's C++ kernels";
  m.attr("parallel_for") = py::capsule(reinterpret_cast<void*>(&ember_parallel_for), "ember.core._parallel.parallel_for");
  m.def("entry_point", [] { return reinterpret_cast<uintptr_t>(&ember_parallel_for); },
        "The address of ember_parallel_for(begin, end, grain, fn, ctx), for generated kernels.");
  m.def("set_num_threads", &ember_parallel_set_num_threads, py::arg("n"));
  m.def("get_num_threads", &ember_parallel_get_num_threads);
  m.def("set_spin_ns", &ember_parallel_set_spin_ns, py::arg("ns"));
  m.def("shutdown", &ember_parallel_shutdown, py::call_guard<py::gil_scoped_release>());
  m.def("worker_count", &ember_parallel_worker_count);
}
