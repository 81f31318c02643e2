"""The kernels' thread pool (``ember.inductor.runtime.parallel``): coverage of ``parallel_for``,
the thread count, fork safety, idle workers that sleep, and reductions that do not depend on the
thread count."""

from __future__ import annotations

import ctypes
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from inductor_testing import assert_same

import ember
from ember.inductor import cpp_builder
from ember.inductor.runtime import parallel

# A probe of ember_parallel_for: counts how often each index is visited, and records pieces that are
# shorter than the grain (a range shorter than the grain is one piece).
_PROBE = r"""
#include <cstdint>
typedef void (*task_fn)(void*, int64_t, int64_t);
typedef void (*pfor_fn)(int64_t, int64_t, int64_t, task_fn, void*);
struct Probe { int32_t* counts; int64_t begin, end, grain; int32_t short_pieces; int32_t calls; };
static void visit(void* ctx, int64_t b, int64_t e) {
  Probe* p = (Probe*)ctx;
  __atomic_fetch_add(&p->calls, 1, __ATOMIC_RELAXED);
  if (e - b < p->grain && !(b == p->begin && e == p->end)) __atomic_fetch_add(&p->short_pieces, 1, __ATOMIC_RELAXED);
  for (int64_t i = b; i < e; ++i) __atomic_fetch_add(&p->counts[i - p->begin], 1, __ATOMIC_RELAXED);
}
extern "C" int probe(void* pfor, int64_t begin, int64_t end, int64_t grain, int32_t* counts) {
  Probe p{counts, begin, end, grain, 0, 0};
  ((pfor_fn)pfor)(begin, end, grain, visit, &p);
  return p.short_pieces;
}
"""


@pytest.fixture(scope="module")
def probe():
    lib = ctypes.CDLL(cpp_builder.build(_PROBE))
    lib.probe.restype = ctypes.c_int
    lib.probe.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    return lib


@pytest.fixture
def threads():
    """Restores the thread count a test changes."""
    before = ember.get_num_threads()
    yield ember.set_num_threads
    ember.set_num_threads(before)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 5])
@pytest.mark.parametrize(
    ("begin", "end", "grain"),
    [(0, 0, 1), (0, 1, 1), (5, 3, 1), (0, 100, 1), (3, 1000, 7), (0, 1000, 1000), (0, 1001, 1000), (-50, 50, 0),
     (10, 100_000, 64), (0, 12345, 100_000)],
)  # fmt: skip
def test_parallel_for_covers_every_index_once(probe, threads, n_threads, begin, end, grain):
    threads(n_threads)
    counts = np.zeros(max(end - begin, 1), dtype=np.int32)
    short = probe.probe(parallel.entry_point(), begin, end, grain, counts.ctypes.data)
    assert short == 0
    expected = np.ones(max(end - begin, 0), dtype=np.int32)
    np.testing.assert_array_equal(counts[: len(expected)], expected)


def test_set_num_threads_changes_the_pool(probe, threads):
    counts = np.zeros(1 << 16, dtype=np.int32)
    for n in (3, 1, 2):
        threads(n)
        assert parallel.library().get_num_threads() == n
        probe.probe(parallel.entry_point(), 0, len(counts), 1, counts.ctypes.data)
        # the caller is one of the n threads; with one thread no pool is kept
        assert parallel.worker_count() == (n - 1 if n > 1 else 0)
    np.testing.assert_array_equal(counts, 3)


def test_idle_workers_sleep(threads):
    """After a kernel the workers spin for some microseconds, then sleep: an idle interval costs
    (almost) no CPU time. (libgomp's default spins for milliseconds per thread after each region.)"""
    threads(4)
    fn = ember.compile(lambda x: (x * 2).sin())
    x = ember.randn(1 << 20)
    with ember.no_grad():
        for _ in range(3):
            fn(x)
        start = time.process_time()
        time.sleep(0.3)
        busy = time.process_time() - start
    assert parallel.worker_count() == 3
    assert busy < 0.01, f"idle workers used {busy * 1e3:.1f} ms of CPU in 300 ms"


@pytest.mark.parametrize("reduce", ["sum", "var", "amax", "argmin", "mean_rows", "sum_2d_t"])
def test_reductions_do_not_depend_on_thread_count(threads, reduce):
    fns = {
        "sum": lambda x: x.sum(),
        "var": lambda x: x.var(),
        "amax": lambda x: (x * 3).amax(),
        "argmin": lambda x: (x - 1).argmin(),
        "mean_rows": lambda x: x.view(64, -1).mean(0),
        "sum_2d_t": lambda x: x.view(1024, 1024).t().sum(),
    }
    x = ember.tensor(np.random.default_rng(0).standard_normal(1 << 20).astype("float32") + 0.5)
    results = []
    for n in (1, 2, 3):
        threads(n)
        fn = ember.compile(fns[reduce])
        with ember.no_grad():
            results.append(fn(x).numpy().tobytes())
    assert results[0] == results[1] == results[2]
    with ember.no_grad():
        assert_same(ember.compile(fns[reduce])(x), fns[reduce](x), rtol=1e-4, atol=1e-4)


def test_long_sum_is_accurate(threads):
    threads(2)
    a = np.random.default_rng(1).standard_normal(1 << 22).astype("float32")
    with ember.no_grad():
        got = float(ember.compile(lambda x: x.sum())(ember.tensor(a)))
    assert abs(got - a.astype(np.float64).sum()) < 1e-2


def test_forked_child_runs_a_compiled_kernel():
    script = textwrap.dedent(
        """
        import os, sys
        import ember
        ember.set_num_threads(2)
        fn = ember.compile(lambda x: (x * 2).sum())
        x = ember.ones(1 << 20)
        with ember.no_grad():
            assert float(fn(x)) == 2 * (1 << 20)
            pid = os.fork()
            if pid == 0:
                ok = float(fn(x)) == 2 * (1 << 20) and float(fn(x + 1)) == 4 * (1 << 20)
                os._exit(0 if ok else 3)
            _, status = os.waitpid(pid, 0)
            assert float(fn(x)) == 2 * (1 << 20)
        sys.exit(os.waitstatus_to_exitcode(status))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]


class MLPBlock(ember.nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.ln = ember.nn.LayerNorm(c)
        self.fc = ember.nn.Linear(c, 4 * c)
        self.proj = ember.nn.Linear(4 * c, c)

    def forward(self, x):
        return x + self.proj(ember.nn.functional.gelu(self.fc(self.ln(x))))


@pytest.mark.parametrize("n_threads", [1, 2])
def test_compiled_mlp_block_matches_eager(threads, n_threads):
    threads(n_threads)
    ember.manual_seed(0)
    block = MLPBlock(64)
    x = ember.randn(256, 64)
    compiled = ember.compile(block)
    outs, grads = [], []
    for fn in (block, compiled):
        block.zero_grad()
        xi = x.clone().requires_grad_(True)
        out = fn(xi)
        (out * out).mean().backward()
        outs.append(out)
        grads.append([xi.grad] + [p.grad.clone() for p in block.parameters()])
    assert_same(outs[1], outs[0], rtol=1e-4, atol=1e-5)
    for got, want in zip(grads[1], grads[0], strict=True):
        assert_same(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["softmax", "layer_norm", "sum_rows"])
def test_every_simd_loop_of_row_kernels_is_vectorized(case):
    """Each ``#pragma omp simd`` loop of a row kernel vectorizes, the last pass over a row included
    (GCC's partial redundancy elimination used to block it)."""
    if cpp_builder.find_compiler().split("/")[-1] not in ("g++", "c++"):
        pytest.skip("-fopt-info-vec is GCC's")
    from inductor_testing import compile_with_inductor

    fns = {
        "softmax": lambda x: ember.softmax(x, -1),
        "layer_norm": lambda x: ember.nn.functional.layer_norm(x, (256,)),
        "sum_rows": lambda x: (x * x).sum(-1),
    }
    compiled, rec = compile_with_inductor(fns[case])
    compiled(ember.randn(64, 256))
    source = rec.graphs[0].source
    lines = source.splitlines()
    pragmas = [i + 1 for i, line in enumerate(lines) if "#pragma omp simd" in line]  # 1-based line numbers
    assert pragmas
    report = cpp_builder.vectorization_report(source)
    vectorized = {int(m) for m in re.findall(r"kernel\.cpp:(\d+):\d+: optimized: loop vectorized", report)}
    # GCC names the loop by its ``for`` line or a line of its body
    missed = [p for p in pragmas if not vectorized & {p + 1, p + 2, p + 3}]
    assert not missed, (missed, sorted(vectorized))


@pytest.mark.parametrize("shape", [(100, 70), (37, 300)])
@pytest.mark.parametrize(
    "case",
    [
        "transpose_scaled",
        "permute3d",
        "sum0",
        "amax0",
        "argmax0",
        "var0",
        "sum0_of_3d",
        "clone_of_t",
        "clone_of_permute",
    ],
)
def test_tiled_column_kernels_match_eager(threads, case, shape):
    """Transposing copies and reductions over the rows of a matrix walk tiles of rows (``_tiled``):
    sizes that are no multiple of the tile, on one and two threads. The clone of a transposed tensor
    keeps its strides, so every access runs across the rows: its loops are interchanged."""
    from inductor_testing import compile_with_inductor

    fns = {
        "transpose_scaled": lambda x: (x.t() * 2 + 1).contiguous(),
        "permute3d": lambda x: x.view(shape[0], shape[1], 1).permute(1, 2, 0).contiguous() - 1,
        "sum0": lambda x: x.sum(0),
        "amax0": lambda x: (x * 3).amax(0),
        "argmax0": lambda x: x.argmax(0),
        "var0": lambda x: x.var(0),
        "sum0_of_3d": lambda x: x.view(shape[0], 1, shape[1]).sum(0),
        "clone_of_t": lambda x: (x * 2).t().clone(),
        "clone_of_permute": lambda x: (x.view(shape[0], shape[1], 1) - 1).permute(1, 2, 0).clone(),
    }
    x = ember.randn(*shape)
    for n in (1, 2):
        threads(n)
        compiled, rec = compile_with_inductor(fns[case])
        assert_same(compiled(x), fns[case](x), rtol=1e-4, atol=1e-4)
    if shape[1] >= 64 and case != "var0":  # enough rows for tiles; var's kernel has two nodes (not tiled)
        assert "xr_t" in rec.graphs[0].source
        assert ("xr_t += 256" in rec.graphs[0].source) == case.startswith("clone_of")


def test_kernels_called_from_two_threads_at_once(threads):
    """Kernels run from several Python threads at once (ctypes releases the GIL): one of them has
    the pool, the others run their loops inline; every result is right."""
    import threading

    threads(2)
    fn = ember.compile(lambda x: (x * 2).sum())
    x = ember.ones(1 << 20)
    with ember.no_grad():
        fn(x)
    errors: list = []

    def work():
        with ember.no_grad():
            for _ in range(20):
                if float(fn(x)) != 2 * (1 << 20):
                    errors.append("wrong sum")

    workers = [threading.Thread(target=work) for _ in range(3)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in workers)
