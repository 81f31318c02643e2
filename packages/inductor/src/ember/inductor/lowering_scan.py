"""Scans (``cumsum``, ``cumprod``) as generated C++ kernels.

A scan along ``dim`` is, for each position of the other dims (a "row", the rows run in parallel), a
sequential loop over the ``n`` elements of the row that carries an accumulator and stores it at each
step. The input is read through its loader, so pointwise producers fuse into the scan's loop.

The kernel is a function of its own in the graph's C++ module (``GeneratedKernel``); the graph holds
it as an ``ExternBuffer`` whose op is the kernel, so the scheduler and the wrapper treat it as an
extern call, and ``compile_fx_inner`` adds its source to the module and binds it once loaded. The
combine steps (``SCANS``) also cover ``logcumsumexp`` and ``cummax``/``cummin`` (value and index, with
eager's rules for ties and NaN); their lowerings register under the ATen ops of those names where the
core has them (today it builds them from other ops, which their graphs then hold).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from typing import Any

from ember.core import dtypes as D
from ember.core.devices import CPU
from ember.core.tensor import empty
from ember.inductor import config
from ember.inductor.cpp_ops import CppOverrides, compute_ctype, storage_ctype
from ember.inductor.indirect import CPP_DECLARE, CPP_RETURN, raise_index_error
from ember.inductor.ir import Buffer, ExternBuffer, Layout, MultiOutput, TensorBox, index_symbols
from ember.inductor.lowering import as_loader, compute_dtype, register
from ember.inductor.pointers import pointer_array
from ember.inductor.sizevars import evaluator
from ember.inductor.virtualized import ReadsHandler, ops, set_ops_handler

# scan type -> (initial accumulator, the C++ statement that folds value ``v`` at position ``i`` into ``acc``)
SCANS: dict[str, tuple[str, str]] = {
    "sum": ("{t}(0)", "acc = acc + v;"),
    "prod": ("{t}(1)", "acc = acc * v;"),
    "logsumexp": ("-std::numeric_limits<{t}>::infinity()", "acc = ember_logaddexp(acc, v);"),
    # eager's rule: a NaN is taken (and each later NaN); ties go to the later index
    "max": ("{t}(0)", "if (i == 0 || ember_isnan(v) || (!ember_isnan(acc) && v >= acc)) { acc = v; idx = i; }"),
    "min": ("{t}(0)", "if (i == 0 || ember_isnan(v) || (!ember_isnan(acc) && v <= acc)) { acc = v; idx = i; }"),
}


class GeneratedKernel:
    """A C++ function of the graph's module called like an extern op: ``kernel(*input_tensors)``.

    ``source`` goes into the module; ``bind(lib)`` takes the loaded function. A call checks that each
    input has the layout the kernel was specialized for (copying it into that layout when not),
    allocates the outputs and calls the function with the data pointers (inputs, then outputs)."""

    def __init__(
        self,
        name: str,
        source: str,
        inputs: list[Buffer],
        outputs: list[tuple[Any, Layout]],
        symbols: list = (),
    ) -> None:
        """``symbols``: the size symbols the kernel reads from ``meta`` (in order), whose values a call
        takes after the input tensors (the graph holds them as the extern call's last arguments)."""
        self.name, self.source = name, source
        self.inputs, self.outputs = inputs, outputs
        self.fn: Callable | None = None
        self.symbols = list(symbols)
        # run as a kernel step of the wrapper (``spec``) rather than as an extern call: set for kernels
        # whose inputs always have the layouts they were generated for, and of static sizes
        self.as_kernel = False
        if self.symbols:
            self._in_strides = [evaluator(self.symbols, b.layout.stride) for b in inputs]
            self._out_layouts = [
                (evaluator(self.symbols, layout.size), evaluator(self.symbols, layout.stride)) for _, layout in outputs
            ]

    def spec(self, output: str) -> Any:
        """The kernel as the wrapper's kernels are described (its one output is ``output``)."""
        from ember.inductor.codegen_cpp import KernelSpec

        return KernelSpec(self.name, self.source, [b.name for b in self.inputs] + [output], [], [output], ())

    def bind(self, lib: Any) -> None:
        fn = getattr(lib, self.name)
        fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
        fn.restype = ctypes.c_int
        self.fn = fn

    def __call__(self, *args_and_sizes: Any) -> Any:
        tensors, values = args_and_sizes[: len(self.inputs)], tuple(args_and_sizes[len(self.inputs) :])
        args = []
        for pos, (t, spec) in enumerate(zip(tensors, self.inputs, strict=True)):
            stride = self._in_strides[pos](values) if self.symbols else spec.layout.stride
            if any(a != b for a, b, n in zip(t._stride, stride, t._shape, strict=True) if n != 1):
                copy = empty(tuple(t._shape), spec.dtype, CPU, stride)
                copy.copy_(t)
                t = copy
            args.append(t)
        if self.symbols:
            outs = [empty(size(values), d, CPU, stride(values)) for (d, _), (size, stride) in
                    zip(self.outputs, self._out_layouts, strict=True)]  # fmt: skip
            meta = (ctypes.c_int64 * len(values))(*values)
        else:
            outs = [empty(layout.size, dtype, CPU, layout.stride) for dtype, layout in self.outputs]
            meta = None
        ptrs = pointer_array(list(args) + list(outs))
        rc = self.fn(ptrs, meta)
        if rc < 0:
            raise_index_error(rc)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return self.name


def scan_source(
    name: str,
    x: TensorBox,
    dim: int,
    scan: str,
    outs: list[tuple[str, Any, Layout]],
    acc_dtype: Any,
    buffers: dict[str, Buffer],
) -> tuple[str, list[str]]:
    """The C++ of one scan kernel, and the names of the buffers it reads (its inputs, in order)."""
    ndim = len(x.size)
    index = list(index_symbols("x", ndim))
    reads = ReadsHandler()
    with set_ops_handler(reads):
        x.loader(index)
    inputs = list(dict.fromkeys(n for n, _ in reads.reads))
    args = inputs + [n for n, _, _ in outs]
    arg_of = {n: f"a{i}" for i, n in enumerate(args)}
    dtype_of = {n: buffers[n].dtype for n in inputs} | {n: d for n, d, _ in outs}
    handler = CppOverrides(arg_of, dtype_of, "i", "s_")
    with set_ops_handler(handler):
        value = x.loader(index)
        acc_t = compute_ctype(acc_dtype)
        init, update = SCANS[scan]
        handler.body.append(f"const {acc_t} v = static_cast<{acc_t}>({value});")
        handler.body.append(update)
        ops.store(outs[0][0], outs[0][2].index(index), "acc")
        if len(outs) > 1:
            ops.store(outs[1][0], outs[1][2].index(index), "idx")
    other = [d for d in range(ndim) if d != dim]
    rows = math.prod(x.size[d] for d in other)
    n = x.size[dim] if ndim else 1
    lines = [f'extern "C" int {name}(void** args, const int64_t* meta) {{', "  " + CPP_DECLARE]
    for i, buf in enumerate(args):
        const = "const " if buf in inputs else ""
        t = storage_ctype(dtype_of[buf])
        lines.append(f"  {const}{t}* __restrict__ a{i} = ({const}{t}*)args[{i}];  // {buf}")
    parallel = rows >= 2 and rows * n >= config.cpp.parallel_threshold
    if parallel:  # rows on the thread pool (runtime/parallel.py)
        lines.append(f"  ember_parallel(0, {rows}, 1, [&](int64_t xr_begin, int64_t xr_end) {{")
        lines.append("  for (int64_t xr = xr_begin; xr < xr_end; ++xr) {")
    else:
        lines.append(f"  for (int64_t xr = 0; xr < {rows}; ++xr) {{")
    for k, d in enumerate(other):
        inner = math.prod(x.size[e] for e in other[k + 1 :])
        expr = "xr" if inner == 1 else f"(xr / {inner})"
        lines.append(f"    const int64_t x{d} = {expr} % {x.size[d]};")
    lines.append(f"    {acc_t} acc = {init.format(t=acc_t)};")
    lines.append("    int64_t idx = 0;")
    var = f"x{dim}" if ndim else "i"
    lines.append(f"    for (int64_t {var} = 0; {var} < {n}; ++{var}) {{")
    if ndim:
        lines.append(f"      const int64_t i = {var};")
    lines.extend("      " + line for line in handler.body)
    lines.append("    }")
    lines.append("    (void)idx;")
    lines.append("  }")
    if parallel:
        lines.append("  });")
    lines.append("  " + CPP_RETURN)
    lines.append("}")
    return "\n".join(lines), inputs


def _scan(ctx, x: TensorBox, dim: int, scan: str, out_dtypes: list[Any]) -> Any:
    if any(not isinstance(n, int) and not getattr(n, "is_Integer", False) for n in x.size):
        raise NotImplementedError("a scan over symbolic sizes (scan kernels are generated for fixed sizes)")
    ndim = len(x.size)
    dim = dim % max(ndim, 1)
    val = ctx.current.meta.get("val")
    vals = list(val) if isinstance(val, list | tuple) else [val]
    layouts = [_layout_of(v) for v in vals]
    acc_dtype = compute_dtype(out_dtypes[0])
    loader = as_loader(x, x.size, acc_dtype) if scan != "max" and scan != "min" else x.loader
    box = TensorBox(x.size, x.dtype, loader)
    first = len(ctx.buffers)
    kname = f"scan_buf{first}"
    names = [f"buf{first + 1 + i}" if len(vals) > 1 else f"buf{first}" for i in range(len(vals))]
    outs = [(names[i], out_dtypes[i], layouts[i]) for i in range(len(vals))]
    source, inputs = scan_source(kname, box, dim, scan, outs, acc_dtype, ctx.name_to_buffer)
    in_bufs = [ctx.name_to_buffer[n] for n in inputs]
    kernel = GeneratedKernel(kname, source, in_bufs, [(d, layout) for _, d, layout in outs])
    origin = [f"{ctx.current.name} = {ctx.current.target}"]
    reason = f"a scan ({scan}) in a generated kernel"
    if len(vals) == 1:
        buf = ExternBuffer(names[0], out_dtypes[0], layouts[0], kernel, tuple(in_bufs), {}, reason, origin)
        return TensorBox.of(ctx._register(buf))
    src = ExternBuffer(f"buf{first}", None, Layout((), ()), kernel, tuple(in_bufs), {}, reason, origin)
    ctx._register(src)
    return tuple(
        TensorBox.of(ctx._register(MultiOutput(names[i], out_dtypes[i], layouts[i], src, i))) for i in range(len(vals))
    )


def _layout_of(val: Any) -> Layout:
    from ember.inductor.layouts import _dense_layout

    if val is None:
        raise NotImplementedError("a scan node without a meta value")
    return _dense_layout(val)


@register("cumsum.default")
def cumsum(ctx, x, dim, *, dtype=None):
    return _scan(ctx, x, dim, "sum", [ctx.out_dtype])


@register("cumprod.default")
def cumprod(ctx, x, dim, *, dtype=None):
    return _scan(ctx, x, dim, "prod", [ctx.out_dtype])


@register("logcumsumexp.default")
def logcumsumexp(ctx, x, dim):
    return _scan(ctx, x, dim, "logsumexp", [ctx.out_dtype])


@register("cummax.default")
def cummax(ctx, x, dim):
    return _scan(ctx, x, dim, "max", [x.dtype, D.int64])


@register("cummin.default")
def cummin(ctx, x, dim):
    return _scan(ctx, x, dim, "min", [x.dtype, D.int64])


__all__ = ["SCANS", "GeneratedKernel", "scan_source"]
