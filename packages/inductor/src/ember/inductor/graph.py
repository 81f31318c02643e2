"""Lowering a whole FX graph: inputs become buffers, nodes become boxes and buffers, outputs are realized.

A node's result stays a ``TensorBox`` (fused into its readers) unless it is read by several nodes
and is not cheap to recompute, grows too big, or is read by an extern call; then it is realized.
Ops with no lowering (and GEMMs, convolutions) run as extern calls of their eager kernel, and each
such decision is logged under the ``perf_hints`` artifact with its reason.
"""

from __future__ import annotations

import logging
import operator
from typing import Any

import sympy

from ember.core.tensor import Tensor
from ember.inductor import (
    config,
    lowering_flex,  # noqa: F401  (registers its lowering)
    lowering_gemm,
    lowering_indirect,  # noqa: F401  (registers its lowerings)
    lowering_nn,  # noqa: F401  (registers its lowerings)
    lowering_optim,  # noqa: F401  (registers its lowerings)
    lowering_scatter,  # noqa: F401  (registers its lowerings)
    lowering_view_scatter,  # noqa: F401  (registers its lowerings)
)
from ember.inductor.cpp_ops import CTYPES
from ember.inductor.inplace import emit_mutations
from ember.inductor.ir import (
    AliasBuffer,
    Buffer,
    ComputedBuffer,
    ExternBuffer,
    InputBuffer,
    Layout,
    MultiOutput,
    SizeInput,
    TensorBox,
    contiguous_strides,
    index_symbols,
)
from ember.inductor.layouts import _dense_layout, _dense_layout_of_extern, _hint  # noqa: F401
from ember.inductor.lowering import LOWERINGS
from ember.inductor.sizevars import FloatSize, as_expr, float_size, is_symbolic, shape_env_of
from ember.inductor.virtualized import CountHandler, set_ops_handler
from ember.logs import get_artifact_logger

perf_log = get_artifact_logger(__name__, "perf_hints")
log = logging.getLogger(__name__)

_EXTERN_KIND = {
    "mm": "a GEMM",
    "bmm": "a batched GEMM",
    "addmm": "a GEMM",
    "convolution": "a convolution",
    "_scaled_dot_product_flash_attention_for_cpu": "attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "attention's backward",
    "convolution_backward": "a convolution's backward",
}


def _is_tensor(v: Any) -> bool:
    return isinstance(v, Tensor)


class GraphLowering:
    def __init__(self, gm: Any, example_inputs: list) -> None:
        self.gm = gm
        self.example_inputs = list(example_inputs)
        self.buffers: list[Buffer] = []
        self.name_to_buffer: dict[str, Buffer] = {}
        self.inputs: list[InputBuffer | Any] = []
        self.outputs: list[Any] = []
        self.fallbacks: list[tuple[str, str]] = []
        self.lowered: set[Any] = set()
        self.hints: list[str] = []  # the perf hints logged, which a warm start logs again
        self.current: Any = None
        self.mutations: list[tuple[InputBuffer, TensorBox]] = []  # copy_ onto inputs, lowered last (inplace.py)
        self.shape_env: Any = None  # of the symbolic sizes, if any

    def hint(self, expr: Any) -> int:
        """A size expression's value at trace time."""
        if not is_symbolic(expr):
            return int(expr)
        return int(expr.xreplace(self.shape_env.var_to_val))

    def out_size(self) -> tuple:
        """The sizes of the current node's (first) output, as the meta kernel worked them out."""
        val = self.current.meta.get("val")
        if isinstance(val, list | tuple):
            val = val[0]
        return as_expr(tuple(val.shape))

    # -- used by lowerings ------------------------------------------------------------------------

    @property
    def out_dtype(self) -> Any:
        val = self.current.meta.get("val")
        if isinstance(val, list | tuple):
            val = val[0]
        return val.dtype

    def _register(self, buf: Buffer) -> Buffer:
        self.buffers.append(buf)
        self.name_to_buffer[buf.name] = buf
        return buf

    def new_buffer(
        self, size, dtype, body, reduction_size=(), reduction_type=None, welford_output=0, layout=None, origins=None
    ):
        origin = f"{self.current.name} = {self.current.target}" if self.current is not None else "output"
        buf = ComputedBuffer(
            f"buf{len(self.buffers)}",
            dtype,
            layout or Layout(tuple(size), contiguous_strides(size)),
            body,
            tuple(reduction_size),
            reduction_type,
            welford_output,
            list(origins) if origins else [*self._input_origins(), origin],
        )
        return self._register(buf)

    def realize(self, box: TensorBox, layout: Layout | None = None) -> Buffer:
        """``box`` in memory. Realized in the default layout, the box itself becomes a read of the
        buffer: its other readers (another extern call, the graph's outputs, a pointwise consumer) read
        what is stored instead of computing it again (a GELU that feeds a GEMM and is saved for the
        backward is computed once)."""
        if box.buffer is not None and (layout is None or box.buffer.layout.same_as(layout)):
            return box.buffer
        loader = box.loader
        origins = box.origins or None
        buf = self.new_buffer(box.size, box.dtype, lambda index, rindex: loader(index), layout=layout, origins=origins)
        if layout is None and box.buffer is None:
            box.buffer, box.loader, box.ops_count = buf, buf.make_loader(), 0
        return buf

    def _input_origins(self) -> list[str]:
        """The origins of the unrealized boxes the current node reads (they are fused into it)."""
        if self.current is None:
            return []
        out: list[str] = []
        for a in self.current.all_input_nodes:
            box = self._env.get(a)
            for b in box if isinstance(box, tuple) else (box,):
                if isinstance(b, TensorBox) and b.buffer is None:
                    out += [o for o in b.origins if o not in out]
        return out

    # -- the graph --------------------------------------------------------------------------------

    def _fallback(self, node: Any, args: tuple, kwargs: dict, reason: str) -> Any:
        def buffers_of(a):
            if isinstance(a, TensorBox):
                return self._strided_view(a) or self.realize(a)
            if isinstance(a, list | tuple):
                return type(a)(buffers_of(x) for x in a)
            return a

        args, kwargs = buffers_of(args), {k: buffers_of(v) for k, v in kwargs.items()}
        val = node.meta.get("val")
        self.fallbacks.append((str(node.target), reason))
        self.hints.append(f"{node.name} ({node.target}) runs as an extern call of its eager kernel: {reason}")
        perf_log.info("%s", self.hints[-1])
        origin = [f"{node.name} = {node.target}"]
        if _is_tensor(val):
            buf = ExternBuffer(f"buf{len(self.buffers)}", val.dtype, _dense_layout_of_extern(val), node.target, args,
                               kwargs, reason, origin)  # fmt: skip
            return TensorBox.of(self._register(buf))
        if isinstance(val, list | tuple):
            src = ExternBuffer(f"buf{len(self.buffers)}", None, Layout((), ()), node.target, args, kwargs, reason,
                               origin)  # fmt: skip
            self._register(src)
            outs = []
            for i, v in enumerate(val):
                if _is_tensor(v):
                    m = MultiOutput(f"buf{len(self.buffers)}", v.dtype, _dense_layout_of_extern(v), src, i)
                    outs.append(TensorBox.of(self._register(m)))
                else:
                    outs.append(v)
            return tuple(outs)
        raise NotImplementedError(f"{node.target} returns {type(val).__name__}, which the code generator cannot hold")

    def _lowerable(self, node: Any, args: tuple, kwargs: dict) -> str | None:
        """Why ``node`` cannot be lowered (``None``: it can)."""
        target = node.target
        packet = getattr(target, "__name__", str(target)).split(".")[1] if "." in str(target) else str(target)
        gemm = lowering_gemm.enabled() or (packet == "addmm" and lowering_gemm.splits(*args[:3], **kwargs))
        if packet in _EXTERN_KIND and not (target in LOWERINGS and gemm):
            return f"{_EXTERN_KIND[packet]} runs as an extern kernel (eager's)"
        if target not in LOWERINGS:
            return f"no lowering for {target}"
        vals = node.meta.get("val")
        vals = list(vals) if isinstance(vals, list | tuple) else [vals]
        dtypes = [v.dtype for v in vals if _is_tensor(v)]
        dtypes += [a.dtype for a in list(args) + list(kwargs.values()) if isinstance(a, TensorBox)]
        for d in dtypes:
            if d not in CTYPES:
                return f"the C++ code generator has no kernels for {d}"
        return None

    def run(self) -> None:
        env: dict[Any, Any] = {}
        self._env = env
        placeholders = 0
        for node in self.gm.graph.nodes:
            self.current = node
            if node.op == "placeholder":
                value = self.example_inputs[placeholders]
                placeholders += 1
                self._note_shape_env(value)
                if _is_tensor(value):
                    if value.device.type != "cpu":
                        raise NotImplementedError(
                            f"the code generator builds kernels for cpu tensors only (C++, or Triton's through its "
                            f"interpreter); {value.device.type} tensors have no device plugin to run kernels on "
                            "(use backend='aot_eager')"
                        )
                    layout = Layout(as_expr(tuple(value.shape)), as_expr(tuple(value.stride())))
                    buf = InputBuffer(f"arg{placeholders - 1}", value.dtype, layout)
                    self._register(buf)
                    self.inputs.append(buf)
                    env[node] = TensorBox.of(buf)
                elif is_symbolic(as_expr(value)):
                    self.inputs.append(SizeInput(f"arg{placeholders - 1}", _size_expr(node, value)))
                    env[node] = as_expr(value)
                else:
                    self.inputs.append(value)
                    env[node] = value
            elif node.op == "call_function":
                args = _map(node.args, env)
                kwargs = {k: _map(v, env) for k, v in node.kwargs.items()}
                if node.target is operator.getitem:
                    env[node] = args[0][args[1]]
                    continue
                val = node.meta.get("val")
                if val is not None and not _is_tensor(val) and not isinstance(val, list | tuple):
                    # a size computed from sizes (sym_size, arithmetic): its expression, read at run time
                    env[node] = _size_expr(node, val)
                    continue
                if val is None and getattr(node.target, "__module__", None) in ("_operator", "operator"):
                    # arithmetic on sizes the trace kept no value for: done on the expressions
                    env[node] = as_expr(sympy.sympify(node.target(*args, **kwargs)))
                    continue
                reason = self._lowerable(node, args, kwargs)
                result = None
                if reason is None:
                    try:
                        result = LOWERINGS[node.target](self, *args, **kwargs)
                        self.lowered.add(node.target)
                    except NotImplementedError as e:
                        reason = str(e)
                if reason is not None:
                    result = self._fallback(node, args, kwargs, reason)
                self._set_origins(node, result)
                env[node] = self._maybe_realize(node, result)
            elif node.op == "output":
                self.current = None
                outs = node.args[0]
                outs = outs if isinstance(outs, list | tuple) else [outs]
                vals = [o.meta.get("val") if hasattr(o, "meta") else None for o in outs]
                for o, v in zip(_map(list(outs), env), vals, strict=True):
                    alias = self._input_alias(o, v)
                    if alias is not None:
                        self.outputs.append(self._register(alias))
                    elif isinstance(o, TensorBox) and (view := self._output_view(o, v)) is not None:
                        self.outputs.append(view)  # a view of a buffer, as eager returns it
                    elif isinstance(o, TensorBox):
                        layout = _dense_layout(v) if _is_tensor(v) else None
                        if o.buffer is not None and not isinstance(o.buffer, ComputedBuffer):
                            layout = None  # inputs and extern outputs are returned as they are
                        self.outputs.append(self.realize(o, layout))
                    elif isinstance(o, FloatSize):
                        raise NotImplementedError("a graph that returns a float computed from sizes")
                    else:
                        self.outputs.append(o)
                emit_mutations(self)
            else:
                raise NotImplementedError(f"the code generator cannot lower a graph node of kind {node.op!r}")

    def _input_alias(self, box: Any, val: Any) -> AliasBuffer | None:
        """An output that only reads one input through index arithmetic is a view of it (AOT autograd
        remakes such outputs from the real inputs with the sizes, strides and offset they have)."""
        if not isinstance(box, TensorBox) or box.buffer is not None or not _is_tensor(val):
            return None
        probe = _ViewProbe()
        with set_ops_handler(probe):
            symbols = list(index_symbols("x", len(box.size)))
            result = box.loader(symbols)
        if (
            probe.count != 1
            or not isinstance(result, tuple)
            or not isinstance(self.name_to_buffer[result[1]], InputBuffer)
        ):
            return None
        source = self.name_to_buffer[result[1]]
        example = self.example_inputs[self.inputs.index(source)]
        if getattr(val, "_storage", None) is not getattr(example, "_storage", 0):
            return None  # eager's output has its own memory: a copy it is
        delta = as_expr(val.storage_offset()) - as_expr(example.storage_offset())
        shape, stride = as_expr(tuple(val.shape)), as_expr(tuple(val.stride()))
        strided = delta + sum((i * s for i, s, n in zip(symbols, stride, shape, strict=True) if n != 1), 0)
        if sympy.expand(result[2] - strided) != 0:
            return None
        layout = Layout(shape, stride, 0)
        return AliasBuffer(f"buf{len(self.buffers)}", val.dtype, layout, source, delta)

    def _strided_view(self, box: TensorBox) -> AliasBuffer | None:
        """``box`` as a strided view of the one buffer it reads, when it is one (a permuted or sliced
        weight going into a GEMM): the extern call gets the view, not a copy."""
        if box.buffer is not None or not box.size:
            return None
        probe = _ViewProbe()
        symbols = list(index_symbols("x", len(box.size)))
        with set_ops_handler(probe):
            result = box.loader(symbols)
        if probe.count != 1 or not isinstance(result, tuple) or result[1] not in self.name_to_buffer:
            return None
        source, expr = self.name_to_buffer[result[1]], sympy.expand(result[2])
        if not expr.is_polynomial(*symbols):
            # a reshape that merges dims indexes with floor and Mod (x // 6 * 48 + x % 6 * 8): as floors
            # they cancel (8 * x), and the merged view of a dense buffer is a strided view of it
            expr = sympy.expand(expr.rewrite(sympy.floor))
        if source.dtype != box.dtype or source.layout.offset != 0 or not expr.is_polynomial(*symbols):
            return None
        strides = []
        for sym, n in zip(symbols, box.size, strict=True):
            c = expr.coeff(sym)
            if not c.is_Integer or int(c) < 0 or (n != 1 and sympy.Poly(expr, sym).degree() > 1):
                return None
            strides.append(int(c))
        offset = expr.subs({sym: 0 for sym in symbols})
        if not offset.is_Integer or int(offset) < 0:
            return None
        layout = Layout(tuple(box.size), tuple(strides), 0)
        return self._register(AliasBuffer(f"buf{len(self.buffers)}", box.dtype, layout, source, int(offset)))

    def _output_view(self, box: TensorBox, val: Any) -> AliasBuffer | None:
        """An output that is a strided view of a buffer (a head of a fused projection, or a layer
        norm's output reshaped to the rows of a GEMM, saved for the backward): the same view of the
        buffer, as eager returns it, not a copy; the backward gets the strides it was traced with."""
        if box.buffer is not None or not _is_tensor(val):
            return None
        view = self._strided_view(box)
        if view is None or not view.layout.same_as(Layout(as_expr(tuple(val.shape)), as_expr(tuple(val.stride())))):
            if view is not None:
                self.buffers.remove(view)
                del self.name_to_buffer[view.name]
            return None
        return view

    def _set_origins(self, node: Any, result: Any) -> None:
        for r in result if isinstance(result, tuple) else (result,):
            if isinstance(r, TensorBox) and r.buffer is None:
                r.origins = [*self._input_origins(), f"{node.name} = {node.target}"]

    def _maybe_realize(self, node: Any, result: Any) -> Any:
        if isinstance(result, tuple):
            return tuple(self._maybe_realize(node, r) for r in result)
        if not isinstance(result, TensorBox) or result.buffer is not None:
            return result
        users = len(node.users)
        if result.ops_count > config.realize_ops_threshold or (
            users > 1 and result.ops_count > config.realize_reads_threshold
        ):
            return TensorBox.of(self.realize(result))
        # a value the graph returns (one saved for the backward) is written anyway: its other readers
        # read that buffer instead of computing it again from what it reads
        val = node.meta.get("val")
        returned = users > 1 and any(u.op == "output" for u in node.users)
        if returned and _is_tensor(val) and _is_static(val) and not self._is_bare_load(result):
            return TensorBox.of(self.realize(result, _dense_layout(val)))
        return result

    def _is_bare_load(self, box: TensorBox) -> bool:
        """Whether ``box`` only reads one buffer through index arithmetic (a view, returned as one)."""
        probe = _ViewProbe()
        with set_ops_handler(probe):
            result = box.loader(list(index_symbols("x", len(box.size))))
        return probe.count == 1 and isinstance(result, tuple)

    def _note_shape_env(self, value: Any) -> None:
        parts = (*value.shape, *value.stride(), value.storage_offset()) if _is_tensor(value) else (value,)
        for part in parts:
            env = shape_env_of(part)
            if env is not None:
                self.shape_env = env
                return


def _size_expr(node: Any, value: Any) -> Any:
    expr = as_expr(value)
    pytype = getattr(getattr(value, "node", None), "pytype", int)
    if isinstance(expr, sympy.Basic) and pytype is float:
        return float_size(expr)
    if isinstance(expr, sympy.Basic) and pytype is not int:
        raise NotImplementedError(f"{node.name} is a symbolic {type(value).__name__}: only numbers are built")
    return expr


class _ViewProbe(CountHandler):
    """Counts ops; a load returns ``("load", buffer)`` so a body that is one bare load shows as such."""

    def load(self, name, index):
        self.count += 1
        return ("load", name, index)


def _is_static(value: Any) -> bool:
    if _is_tensor(value):
        return all(type(s) is int for s in (*value.shape, *value.stride()))
    return type(value).__name__ not in ("SymInt", "SymFloat", "SymBool")


def _map(a: Any, env: dict) -> Any:
    if hasattr(a, "op") and hasattr(a, "users"):
        return env[a]
    if isinstance(a, list | tuple):
        return type(a)(_map(x, env) for x in a)
    if isinstance(a, dict):
        return {k: _map(v, env) for k, v in a.items()}
    return a
