"""Random ops in generated code: Philox numbers of a ``(seed, offset)`` pair and the element index.

Eager's samplers are counter-based (``ember.core.random_bits``): element ``i`` (row-major) of an op's
result takes Philox counter ``offset + i``, and the op moves the generator's offset by its element
count. AOT autograd already makes each random op of a graph ``philox_call(seed, offset, op, ...)``
(``ember.aot._rng``): the graph takes the default generator's seed and offset as two int inputs,
threads the offset from op to op and returns the final one, which the runtime moves the generator
to. Here those ints become one-element int64 buffers (``RngGraph`` converts them at each call, and
converts back the ones the graph returns), and each ``philox_call`` of an op in ``RANDOM`` becomes
a loop body that computes Philox of ``(seed, offset + i)`` in C++ (``cpp_ops.PHILOX``) with eager's
arithmetic on the words. So ``rand``, ``rand_like``, ``randint``, ``bernoulli`` and
``native_dropout`` give eager's numbers bit for bit, successive calls differ and ``ember.manual_seed``
replays them; a backward that recomputes a draw gets the forward's seed and offset, so dropout's mask
is the same. ``randn`` is eager's Box-Muller on the same words with the C library's float32
``log``/``cos``: within a few ulps of eager, not bit for bit. ``ember._inductor.config.fallback_random
= True`` makes every random op run as its eager kernel (at the same seed and offset) instead.

Run as eager calls (at the right seed and offset): float64 samples (eager draws 53-bit numbers from
two words), ``bernoulli`` with float64 probabilities, and random ops outside ``RANDOM``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from ember.aot._rng import philox_call
from ember.core import dtypes as D
from ember.core.dispatch import OpOverload
from ember.core.tensor import Tensor, from_array
from ember.inductor import config
from ember.inductor.ir import ExternBuffer, Layout, MultiOutput, TensorBox, contiguous_strides, numel
from ember.inductor.lowering import LOWERINGS, as_loader, compute_dtype, make_box
from ember.inductor.virtualized import ops

_HALF_BITS = {D.float16: 11, D.bfloat16: 8}
_MASK = (1 << 64) - 1
_FLOATS = (D.float32, D.float16, D.bfloat16)


@dataclass
class Rng:
    """Where an op's draws start: the seed's box and the offset's box (one int64 element each)."""

    seed: TensorBox
    offset: TensorBox

    def counters(self, size: tuple[int, ...]) -> Callable[[list], tuple[Any, Any]]:
        """The loader of ``(seed, offset + row-major index)`` over ``size``."""
        strides = contiguous_strides(size)
        ls, lo = self.seed.loader, self.offset.loader

        def loader(index):
            linear = sum((i * s for i, s in zip(index, strides, strict=True)), sympy.Integer(0))
            zero = [sympy.Integer(0)]
            return ls(zero), ops.add(lo(zero), ops.index_expr(linear, D.int64))

        return loader


def _check(dtype: Any, generator: Any = None) -> None:
    if generator is not None:
        raise NotImplementedError("a random op with an explicit generator runs as an eager call")
    if dtype not in (*_FLOATS, D.int64, D.int32, D.int16, D.int8, D.uint8, D.bool_):
        raise NotImplementedError(f"random numbers of {dtype} are drawn by eager's kernel")


def _draw(rng: Rng, size, kind: str, *extra: int) -> TensorBox:
    """The box of ``ops.<kind>(seed, offset + index, *extra)`` over ``size``."""
    if any(not isinstance(s, int) and not getattr(s, "is_Integer", False) for s in size):
        raise NotImplementedError("random numbers over symbolic sizes are drawn by eager's kernel")
    size = tuple(int(s) for s in size)
    counters = rng.counters(size)

    def loader(index):
        seed, offset = counters(index)
        return getattr(ops, kind)(seed, offset, *[ops.constant(v, D.int64) for v in extra])

    return make_box(size, D.int64 if kind == "randint64" else D.float32, loader)


def _uniform(rng: Rng, size, dtype) -> TensorBox:
    """Eager's uniform [0, 1) of ``dtype``: float32, rounded down to the precision of a half type."""
    u = _draw(rng, size, "rand")
    bits = _HALF_BITS.get(dtype)
    if bits is None:
        return u
    lu, scale = u.loader, float(2**bits)

    def loader(i):
        c = ops.constant(scale, D.float32)
        return ops.truediv(ops.floor(ops.mul(lu(i), c)), c)

    return make_box(u.size, D.float32, loader)


def _cast(box: TensorBox, dtype: Any) -> TensorBox:
    return make_box(box.size, dtype, as_loader(box, box.size, dtype))


def rand(ctx, rng, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    _check(ctx.out_dtype, generator)
    return _cast(_uniform(rng, size, ctx.out_dtype), ctx.out_dtype)


def rand_like(
    ctx, rng, x, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return rand(ctx, rng, x.size, generator=generator)


def randn(ctx, rng, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    _check(ctx.out_dtype, generator)
    if ctx.out_dtype not in _FLOATS:
        raise NotImplementedError(f"randn of {ctx.out_dtype} runs as eager's kernel")
    return _cast(_draw(rng, size, "randn"), ctx.out_dtype)


def randn_like(
    ctx, rng, x, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return randn(ctx, rng, x.size, generator=generator)


def _randint(ctx, rng, low: int, high: int, size, generator=None) -> TensorBox:
    _check(ctx.out_dtype, generator)
    if not low < high or ctx.out_dtype in _FLOATS or ctx.out_dtype == D.bool_:
        raise NotImplementedError("this randint runs as eager's kernel (an empty range, or a float or bool result)")
    return _cast(_draw(rng, size, "randint64", low, high), ctx.out_dtype)


def randint(ctx, rng, high, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return _randint(ctx, rng, 0, high, size, generator)


def randint_low(ctx, rng, low, high, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return _randint(ctx, rng, low, high, size, generator)


def bernoulli_p(ctx, rng, x, p, *, generator=None):
    _check(ctx.out_dtype, generator)
    if not 0 <= p <= 1:
        raise NotImplementedError("bernoulli with p outside [0, 1] raises in eager's kernel")
    lu = _uniform(rng, x.size, D.float32).loader
    pf = float(np.float32(p))  # eager compares the float32 draw with p rounded to float32 (NumPy's rule)
    dt = compute_dtype(ctx.out_dtype)
    return make_box(x.size, ctx.out_dtype, lambda i: ops.to_dtype(ops.lt(lu(i), ops.constant(pf, D.float32)), dt))


def bernoulli(ctx, rng, x, *, generator=None):
    _check(ctx.out_dtype, generator)
    if x.dtype not in _FLOATS:
        raise NotImplementedError(f"bernoulli with {x.dtype} probabilities is drawn by eager's kernel")
    lu, lp = _uniform(rng, x.size, D.float32).loader, as_loader(x, x.size, D.float32)
    dt = compute_dtype(ctx.out_dtype)
    return make_box(x.size, ctx.out_dtype, lambda i: ops.to_dtype(ops.lt(lu(i), lp(i)), dt))


def native_dropout(ctx, rng, x, p, train=None):
    if train is False or not numel(x.size) or x.dtype not in _FLOATS:
        raise NotImplementedError("this native_dropout runs as eager's kernel (not training, empty, or not float)")
    lu = _uniform(rng, x.size, D.float32).loader
    keep = float(np.float32(1.0 - p))
    mask = make_box(x.size, D.bool_, lambda i: ops.lt(lu(i), ops.constant(keep, D.float32)))
    # eager: (input * mask) * scale, scale = 1 / (1 - p) in float32 rounded to the input's dtype (0 when p == 1)
    scale = float((np.float32(1.0) / np.float32(1.0 - p)).astype(x.dtype.np)) if p < 1 else 0.0
    lx, lm, dt = as_loader(x, x.size, x.dtype), mask.loader, compute_dtype(x.dtype)

    def out(i):
        return ops.mul(ops.mul(lx(i), ops.to_dtype(lm(i), dt)), ops.constant(scale, dt))

    return make_box(x.size, x.dtype, out), mask


def _op(name: str) -> OpOverload | None:
    from ember.core import ops as core_ops

    packet, _, overload = name.partition(".")
    return getattr(getattr(core_ops.aten, packet, None), overload or "default", None)


# op -> its generated lowering ``fn(ctx, rng, *args, **kwargs)``; every one uses one counter per element
_TABLE = {
    "rand.default": rand, "rand.generator": rand, "rand_like.default": rand_like, "randn.default": randn,
    "randn.generator": randn, "randn_like.default": randn_like, "randint.default": randint,
    "randint.low": randint_low, "randint.generator": randint, "randint.low_generator": randint_low,
    "rand_like.generator": rand_like, "randn_like.generator": randn_like, "bernoulli.p": bernoulli_p, "bernoulli.default": bernoulli,
    "native_dropout.default": native_dropout,
}  # fmt: skip
RANDOM: dict[OpOverload, Callable[..., Any]] = {op: fn for name, fn in _TABLE.items() if (op := _op(name))}


class EagerDraw:
    """An extern call of a random op's eager kernel at the graph's seed and offset: takes the seed and
    offset buffers and the op's arguments, returns the op's output and the offset after it (a buffer)."""

    def __init__(self, op: OpOverload) -> None:
        self.op = op

    def __call__(self, seed: Tensor, offset: Tensor, *args: Any, **kwargs: Any) -> tuple:
        out, after = philox_call(_int(seed), _int(offset), self.op, *args, **kwargs)
        after_t = from_array(np.array([after & _MASK], dtype=np.uint64).view(np.int64), D.int64)
        return (*out, after_t) if isinstance(out, tuple) else (out, after_t)

    def __repr__(self) -> str:
        return f"philox_call[{self.op}]"


def _int(t: Tensor) -> int:
    return int(t.numpy().view(np.uint64)[0])


def lower_philox_call(ctx, seed, offset, op, *args, **kwargs):
    """``philox_call(seed, offset, op, ...)``: the op's lowering from ``RANDOM`` (``(output, offset after)``),
    else an eager call of the op at that seed and offset."""
    rng = Rng(seed, offset)
    fn = RANDOM.get(op)
    reason = "ember._inductor.config.fallback_random is set" if config.fallback_random else None
    if fn is not None and reason is None:
        try:
            out = fn(ctx, rng, *args, **kwargs)
        except NotImplementedError as e:
            reason = str(e)
        else:
            count = numel((out[0] if isinstance(out, tuple) else out).size)
            lo = offset.loader
            after = make_box((1,), D.int64, lambda i: ops.add(lo(i), ops.constant(count, D.int64)))
            return out, after
    return _eager_draw(ctx, rng, op, args, kwargs, reason or f"no generated code for {op}")


def _eager_draw(ctx, rng: Rng, op, args, kwargs, reason: str):
    from ember.inductor.graph import _dense_layout_of_extern, perf_log

    node = ctx.current
    val = node.meta.get("val")[0]
    vals = list(val) if isinstance(val, list | tuple) else [val]

    def buffers_of(a):
        if isinstance(a, TensorBox):
            return ctx.realize(a)
        if isinstance(a, list | tuple):
            return type(a)(buffers_of(x) for x in a)
        return a

    perf_log.info("%s (%s) runs as an extern call of its eager kernel: %s", node.name, op, reason)
    ctx.fallbacks.append((str(op), reason))
    call_args = (ctx.realize(rng.seed), ctx.realize(rng.offset), *buffers_of(tuple(args)))
    src = ExternBuffer(f"buf{len(ctx.buffers)}", None, Layout((), ()), EagerDraw(op), call_args,
                       {k: buffers_of(v) for k, v in kwargs.items()}, reason, [f"{node.name} = {op}"])  # fmt: skip
    ctx._register(src)
    outs = []
    for i, v in enumerate([*vals, None]):
        dtype, layout = (v.dtype, _dense_layout_of_extern(v)) if v is not None else (D.int64, Layout((1,), (1,)))
        outs.append(TensorBox.of(ctx._register(MultiOutput(f"buf{len(ctx.buffers)}", dtype, layout, src, i))))
    out = tuple(outs[:-1]) if isinstance(val, list | tuple) else outs[0]
    return out, outs[-1]


LOWERINGS[philox_call] = lower_philox_call


# -- the graph's int seed and offset, as buffers ---------------------------------------------------------


def rng_inputs(gm: Any) -> tuple[list[int], list[int]]:
    """The positions of the int placeholders that are seeds or offsets of ``philox_call``s, and of the
    graph outputs that are seeds or offsets (an offset after a draw, or such an input passed through)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    rng_nodes: set = set()
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is philox_call:
            rng_nodes.update(a for a in n.args[:2] if hasattr(a, "op"))
            rng_nodes.add(n)
    inputs = [i for i, n in enumerate(placeholders) if n in rng_nodes]
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = out_node.args[0]
    outs = list(outs) if isinstance(outs, list | tuple) else [outs]

    def is_rng(n) -> bool:
        if n in rng_nodes and n.op == "placeholder":
            return True
        return n.op == "call_function" and n.target is operator.getitem and n.args[0] in rng_nodes and n.args[1] == 1

    outputs = [i for i, o in enumerate(outs) if hasattr(o, "op") and is_rng(o)]
    return inputs, outputs


def as_rng_tensor(value: int) -> Tensor:
    return from_array(np.array([int(value) & _MASK], dtype=np.uint64).view(np.int64), D.int64)


class RngGraph:
    """A compiled graph whose int seed and offset inputs are passed as one-element int64 tensors, and
    whose seed and offset outputs come back as ints (the boxed callable AOT autograd calls)."""

    _boxed_call = True

    def __init__(self, compiled: Any, inputs: list[int], outputs: list[int]) -> None:
        self.compiled, self.rng_inputs, self.rng_outputs = compiled, inputs, outputs

    def __getattr__(self, name: str) -> Any:  # kernel_count, source, fallbacks... of the compiled graph
        return getattr(self.compiled, name)

    def __call__(self, args: list) -> list:
        args = list(args)
        for i in self.rng_inputs:
            args[i] = as_rng_tensor(args[i])
        outs = list(self.compiled(args))
        for i in self.rng_outputs:
            outs[i] = _int(outs[i])
        return outs


__all__ = ["RANDOM", "EagerDraw", "RngGraph", "as_rng_tensor", "lower_philox_call", "rng_inputs"]
