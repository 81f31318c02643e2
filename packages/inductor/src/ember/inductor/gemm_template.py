"""A blocked C++ GEMM, generated for one problem (sizes, strides, dtype, alpha/beta) and one blocking.

``out[b] = beta * bias[b] + alpha * A[b] @ B[b]`` for ``b`` in the batch (``mm``: batch 1, no bias;
``addmm``: batch 1, bias broadcast by its strides; ``bmm``: a batch, no bias). A, B and the bias are
read through their strides (a transposed operand is a stride swap, not a copy), from element offsets
into the buffers passed.

The structure is the classic one of BLAS libraries (Goto's). The output is split into tasks of
``MC`` rows by ``NC`` columns, spread over the kernels' thread pool (``runtime/parallel.py``, as the
other kernels' parallel loops). For each ``KC``-deep slice of K, a task packs its columns of B into
``NR``-wide panels and its rows of A into ``MR``-tall panels (zero-padded at the edges, so the
micro-kernel never branches), into buffers of its thread's own: tasks share nothing and meet no
barrier but the last. Each ``MR x NR`` tile is then one micro-kernel call that keeps the tile in
registers (GCC vector extensions of the CPU's native width: ``MR`` rows of ``NR / lanes``) and does
a rank-1 update per step of K, a panel of B staying in L1 while the block of A streams from L2.
The first K slice stores ``alpha * acc (+ beta * bias)``; later ones add ``alpha * acc``. With
``beta == 0`` the bias is never read (a NaN in it does not leak), as BLAS does.

Float32 accumulates in float32 and float64 in float64, as eager's BLAS. The kernel takes
``(void** args, const int64_t* meta)``: the data pointers of A's buffer, B's, the bias's (addmm) and
the output; ``meta`` holds the sizes and strides of the input buffers, which the kernel checks
against the ones it was generated for before touching memory (it returns ``k + 1`` when the
``k``-th differs).
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember.core import dtypes as D
from ember.core.devices import CPU
from ember.core.tensor import empty
from ember.inductor import cpp_builder
from ember.inductor.pointers import pointer_array
from ember.inductor.runtime.parallel import KERNEL_PRELUDE

_CTYPE = {D.float32: "float", D.float64: "double"}
# work (batch * M * N * K multiply-adds) below which the kernel runs on one thread
PARALLEL_WORK = 64 * 64 * 64


@dataclass(frozen=True)
class GemmConfig:
    """A blocking: the micro-tile ``mr x nr``, the task of ``mc`` rows by ``nc`` columns, the slice of
    ``kc`` of K. ``mc`` is a multiple of ``mr`` and ``nc`` of ``nr``."""

    mr: int
    nr: int
    mc: int
    kc: int
    nc: int

    @property
    def name(self) -> str:
        return f"cpp_gemm_{self.mr}x{self.nr}_mc{self.mc}_kc{self.kc}_nc{self.nc}"


def configs_for(dtype: Any) -> list[GemmConfig]:
    """The blockings tried for ``dtype``. Micro-tiles of 12 to 16 row registers (enough independent
    multiply-adds to hide their latency) on AVX-512, and smaller ones that fit narrower registers; a
    packed panel of B fits L1 and a block of A L2 of common CPUs; tasks small enough to feed a few
    threads at the sizes of a Linear layer."""
    if dtype == D.float32:
        return [GemmConfig(12, 16, 96, 256, 256), GemmConfig(6, 32, 96, 256, 512), GemmConfig(6, 16, 48, 256, 256)]
    if dtype == D.float64:
        return [GemmConfig(8, 16, 64, 256, 256), GemmConfig(6, 8, 96, 256, 256), GemmConfig(12, 8, 48, 128, 256)]
    raise NotImplementedError(f"the GEMM template is built for float32 and float64, not {dtype}")


@dataclass(frozen=True)
class Operand:
    """How a GEMM reads one input: from the buffer of sizes ``buf_size`` and strides ``buf_stride``,
    at element ``offset``, with strides ``strides`` over the (batch, row, column) dims of the operand."""

    buf_size: tuple[int, ...]
    buf_stride: tuple[int, ...]
    offset: int
    strides: tuple[int, int, int]


@dataclass(frozen=True)
class GemmProblem:
    op: str  # "mm", "addmm", "bmm"
    dtype: Any
    batch: int
    m: int
    n: int
    k: int
    a: Operand
    b: Operand
    bias: Operand | None = None
    alpha: float = 1.0
    beta: float = 1.0

    @property
    def operands(self) -> list[Operand]:
        return [self.a, self.b] + ([self.bias] if self.bias is not None else [])

    @property
    def out_size(self) -> tuple[int, ...]:
        return (self.batch, self.m, self.n) if self.op == "bmm" else (self.m, self.n)

    def describe(self) -> str:
        sizes = f"{self.batch}x" if self.op == "bmm" else ""
        text = f"{self.op} {sizes}{self.m}x{self.n}x{self.k} (MxNxK) {self.dtype}"
        text += f" A strides {self.a.strides[1:]} B strides {self.b.strides[1:]}"
        if self.bias is not None:
            text += f" bias strides {self.bias.strides[1:]} alpha={self.alpha} beta={self.beta}"
        return text


def _literal(value: float, ctype: str) -> str:
    value = float(value)
    if not math.isfinite(value):
        raise NotImplementedError(f"the GEMM template takes finite alpha and beta, not {value}")
    return f"(({ctype}){value.hex()})"


def gemm_source(name: str, p: GemmProblem, c: GemmConfig) -> str:
    """The C++ of one GEMM kernel (a whole translation unit: it is built into a library of its own)."""
    if c.mc % c.mr or c.nc % c.nr:
        raise ValueError(f"{c}: mc must be a multiple of mr and nc of nr")
    t = _CTYPE.get(p.dtype)
    if t is None:
        raise NotImplementedError(f"the GEMM template is built for float32 and float64, not {p.dtype}")
    m, n, k, mr, nr = p.m, p.n, p.k, c.mr, c.nr
    sa, sb = p.a.strides, p.b.strides
    so = (m * n, n, 1)  # the output is contiguous
    has_bias = p.bias is not None and p.beta != 0
    sc = p.bias.strides if p.bias is not None else (0, 0, 0)
    alpha, beta = _literal(p.alpha, t), _literal(p.beta, t)
    kc_max, nc_max = min(c.kc, max(k, 1)), min(c.nc, n)
    lines = [
        f"namespace {name}_impl {{",
        f"typedef {t} T;",
        f"static constexpr int64_t MR = {mr}, NR = {nr}, MC = {c.mc}, KC = {c.kc}, NC = {c.nc};",
        f"static constexpr int64_t M = {m}, N = {n}, K = {k}, BATCH = {p.batch};",
        "// registers of the native width (an NR-wide row is NV of them), no wider than a row",
        "static constexpr int VB = NR * sizeof(T) < EMBER_VECTOR_BYTES ? NR * sizeof(T) : EMBER_VECTOR_BYTES;",
        "typedef T V __attribute__((vector_size(VB)));",
        "static constexpr int L = VB / sizeof(T), NV = NR / L;",
        'static_assert(NR % L == 0, "NR must be a multiple of the vector width");',
        "",
        "// one MR x NR tile: acc[i] += a[q][i] * b[q][:] for each step q of the packed panels, into tile",
        "static inline void micro(int64_t kc, const T* __restrict__ ap, const T* __restrict__ bp, T* tile) {",
        "  V acc[MR][NV];",
        "  for (int i = 0; i < MR; ++i)",
        "    for (int v = 0; v < NV; ++v) acc[i][v] = V{};",
        "  for (int64_t q = 0; q < kc; ++q) {",
        "    V b[NV];",
        "    for (int v = 0; v < NV; ++v) std::memcpy(&b[v], bp + q * NR + v * L, sizeof(V));",
        "#pragma GCC unroll 16",
        "    for (int i = 0; i < MR; ++i) {",
        "      const T a = ap[q * MR + i];",
        "      for (int v = 0; v < NV; ++v) acc[i][v] += a * b[v];",
        "    }",
        "  }",
        "  std::memcpy(tile, acc, sizeof(acc));",
        "}",
        "",
        f'extern "C" int {name}(void** args, const int64_t* meta) {{',
    ]
    lines += _checks(p)
    lines.append(f"  const {t}* __restrict__ A0 = (const {t}*)args[0] + {p.a.offset};")
    lines.append(f"  const {t}* __restrict__ B0 = (const {t}*)args[1] + {p.b.offset};")
    out_arg = 2
    if p.bias is not None:
        lines.append(f"  const {t}* __restrict__ C0 = (const {t}*)args[2] + {p.bias.offset}; (void)C0;")
        out_arg = 3
    lines.append(f"  {t}* __restrict__ O0 = ({t}*)args[{out_arg}];")
    if m == 0 or n == 0 or p.batch == 0:
        lines += ["  return 0;", "}"]
        return _finish(name, lines)
    bias_at = f"{beta} * C0[bb * {sc[0]} + (i) * {sc[1]} + (j) * {sc[2]}]" if has_bias else f"({t})0"
    if k == 0:
        lines += [
            "  for (int64_t bb = 0; bb < BATCH; ++bb)",
            "    for (int64_t i = 0; i < M; ++i)",
            "      for (int64_t j = 0; j < N; ++j)",
            f"        O0[bb * {so[0]} + i * {so[1]} + j] = {bias_at};",
            "  return 0;",
            "}",
        ]
        return _finish(name, lines)
    parallel = p.batch * m * n * k >= PARALLEL_WORK
    a_block = -(-min(c.mc, m) // mr) * mr * kc_max  # elements of one packed block of A
    b_block = -(-nc_max // nr) * nr * kc_max  # and of one packed chunk of B
    lines += [
        "  const int64_t MB = (M + MC - 1) / MC, NB = (N + NC - 1) / NC;",
        "  int failed = 0;",
        "  // a task: MC rows by NC columns of one output matrix, over all of K; each piece of tasks packs",
        "  // into buffers of its own, so pieces share nothing",
        "  auto run = [&](int64_t t_begin, int64_t t_end) {",
        f"    T* ap = (T*)std::aligned_alloc(64, ({a_block * _size(t)} + 63) / 64 * 64);",
        f"    T* bp = (T*)std::aligned_alloc(64, ({b_block * _size(t)} + 63) / 64 * 64);",
        "    if (ap == nullptr || bp == nullptr) {",
        "      std::free(ap); std::free(bp);",
        "      __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);",
        "      return;",
        "    }",
        "    for (int64_t task = t_begin; task < t_end; ++task) {",
        "    const int64_t bb = task / (MB * NB), ib = task / NB % MB, jb = task % NB;",
        f"    const T* A = A0 + bb * {sa[0]};",
        f"    const T* B = B0 + bb * {sb[0]};",
        f"    T* O = O0 + bb * {so[0]};",
        "    const int64_t ic = ib * MC, mc = std::min(MC, M - ic), mpanels = (mc + MR - 1) / MR;",
        "    const int64_t jc = jb * NC, nc = std::min(NC, N - jc), npanels = (nc + NR - 1) / NR;",
        "    for (int64_t pc = 0; pc < K; pc += KC) {",
        "      const int64_t kc = std::min(KC, K - pc);",
        "      for (int64_t jp = 0; jp < npanels; ++jp) {  // B[pc:pc+kc, jc+jp*NR:+NR] -> NR-wide panels",
        "        T* dst = bp + jp * kc * NR;",
        "        const int64_t j0 = jc + jp * NR;",
        "        for (int64_t q = 0; q < kc; ++q)",
        "          for (int64_t j = 0; j < NR; ++j)",
        f"            dst[q * NR + j] = j0 + j < N ? B[(pc + q) * {sb[1]} + (j0 + j) * {sb[2]}] : (T)0;",
        "      }",
        "      for (int64_t ip = 0; ip < mpanels; ++ip) {  // A[ic:ic+mc, pc:pc+kc] -> MR-tall panels",
        "        T* dst = ap + ip * kc * MR;",
        "        const int64_t i0 = ic + ip * MR;",
        "        for (int64_t q = 0; q < kc; ++q)",
        "          for (int64_t i = 0; i < MR; ++i)",
        f"            dst[q * MR + i] = i0 + i < M ? A[(i0 + i) * {sa[1]} + (pc + q) * {sa[2]}] : (T)0;",
        "      }",
        "      const bool first = pc == 0;",
        "      for (int64_t jp = 0; jp < npanels; ++jp) {  // a panel of B stays in L1 over the block of A",
        "        const int64_t j0 = jc + jp * NR, nr = std::min(NR, N - j0);",
        "        for (int64_t ip = 0; ip < mpanels; ++ip) {",
        "          const int64_t i0 = ic + ip * MR, mr = std::min(MR, M - i0);",
        "          T acc[MR][NR];",
        "          micro(kc, ap + ip * kc * MR, bp + jp * kc * NR, &acc[0][0]);",
        "          for (int64_t r = 0; r < mr; ++r) {",
        f"            T* o = O + (i0 + r) * {so[1]} + j0;",
        "            const int64_t i = i0 + r; (void)i;",
        "            if (first) {",
        "              for (int64_t j = j0; j < j0 + nr; ++j)",
        f"                o[j - j0] = {alpha} * acc[r][j - j0] + {bias_at};",
        "            } else {",
        "              for (int64_t j = 0; j < nr; ++j) o[j] += " + alpha + " * acc[r][j];",
        "            }",
        "          }",
        "        }",
        "      }",
        "    }",
        "  }",
        "    std::free(ap);",
        "    std::free(bp);",
        "  };",
        # a small GEMM runs on the calling thread; others on the kernels' thread pool, a task a piece
        "  ember_parallel(0, BATCH * MB * NB, 1, run);" if parallel else "  run(0, BATCH * MB * NB);",
        "  return failed ? -1 : 0;",
        "}",
    ]
    return _finish(name, lines)


HEADER = (
    """#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#if defined(__AVX512F__)
#define EMBER_VECTOR_BYTES 64
#elif defined(__AVX__)
#define EMBER_VECTOR_BYTES 32
#else
#define EMBER_VECTOR_BYTES 16
#endif
"""
    + KERNEL_PRELUDE
)


def _finish(name: str, lines: list[str]) -> str:
    # each kernel lives in a namespace of its own (its helpers and constants), so several kernels can
    # share one translation unit; the extern "C" entry point keeps its plain name
    return "\n".join([*lines, f"}}  // namespace {name}_impl", ""])


def gemm_module(sources: list[str]) -> str:
    """One translation unit holding the kernels ``gemm_source`` made."""
    return HEADER + "\n".join(sources)


def _size(ctype: str) -> int:
    return 4 if ctype == "float" else 8


def _checks(p: GemmProblem) -> list[str]:
    """Compare the buffers' sizes and strides in ``meta`` with the ones the kernel was generated for."""
    lines, pos = [], 0
    for j, opnd in enumerate(p.operands):
        nd = len(opnd.buf_size)
        conds = [f"meta[{pos + i}] != {v}" for i, v in enumerate(opnd.buf_size)]
        conds += [f"meta[{pos + nd + i}] != {s}" for i, (s, v) in enumerate(zip(opnd.buf_stride, opnd.buf_size,
                  strict=True)) if v != 1]  # fmt: skip
        pos += 2 * nd
        if conds:
            lines.append(f"  if ({' || '.join(conds)}) return {j + 1};")
    return lines


def _as_laid_out(t: Any, opnd: Operand) -> Any:
    """``t``, or a copy of it with the strides the kernel was generated for when its own differ (an eager
    op may lay out its result otherwise than its meta kernel said). Other sizes stay: the kernel refuses them."""
    if tuple(t._shape) != opnd.buf_size or all(
        a == b for a, b, n in zip(t._stride, opnd.buf_stride, opnd.buf_size, strict=True) if n != 1
    ):
        return t
    copy = empty(opnd.buf_size, t.dtype, CPU, opnd.buf_stride)
    copy.copy_(t)
    return copy


class GemmKernel:
    """A compiled GEMM kernel called like an eager op: ``kernel(a_buf, b_buf[, bias_buf]) -> out``."""

    def __init__(self, problem: GemmProblem, config: GemmConfig, name: str | None = None) -> None:
        self.problem, self.config = problem, config
        self.name = name or config.name
        self.source = gemm_module([gemm_source(self.name, problem, config)])
        self.fn: Any = None

    def load(self, lib: Any = None) -> GemmKernel:
        """Build (or take from the disk cache) and load the kernel's library (or take it from ``lib``, a
        library built from a ``gemm_module`` that holds this kernel)."""
        fn = getattr(lib if lib is not None else cpp_builder.load(self.source), self.name)
        fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
        fn.restype = ctypes.c_int
        self.fn = fn
        return self

    def __call__(self, *tensors: Any) -> Any:
        p = self.problem
        if self.fn is None:
            self.load()
        tensors = tuple(_as_laid_out(t, o) for t, o in zip(tensors, p.operands, strict=True))
        meta = np.array([v for t in tensors for v in (*t._shape, *t._stride)] or [0], dtype=np.int64)
        out = empty(p.out_size, p.dtype, CPU)
        ptrs = pointer_array([*tensors, out])
        rc = self.fn(ptrs, meta.ctypes.data)
        if rc > 0:
            opnd, t = p.operands[rc - 1], tensors[rc - 1]
            raise RuntimeError(
                f"GEMM kernel {self.name} was generated for an input of sizes {opnd.buf_size} and strides "
                f"{opnd.buf_stride}, got {tuple(t._shape)}/{tuple(t._stride)}: recompile for these inputs"
            )
        if rc < 0:
            raise MemoryError(f"GEMM kernel {self.name} could not allocate its packing buffers")
        return out

    def __repr__(self) -> str:
        return self.name


__all__ = ["GemmConfig", "GemmKernel", "GemmProblem", "Operand", "configs_for", "gemm_module", "gemm_source"]
