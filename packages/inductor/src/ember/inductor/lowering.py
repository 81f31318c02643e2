"""Lowerings: each core ATen op becomes ``TensorBox``es (pointwise, views) or buffers (reductions).

A lowering is ``fn(ctx, *args, **kwargs)``; ``ctx`` is the ``GraphLowering`` with the node being
lowered (its output dtype comes from the node's meta value, so type promotion follows eager's).
Ops with no lowering run as extern calls of their eager kernel (``graph.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import sympy

from ember.core import dtypes as D
from ember.core.dispatch import OpOverload
from ember.core.promotion import promote_types
from ember.inductor.ir import ComputedBuffer, Index, Layout, TensorBox, contiguous_strides, numel
from ember.inductor.sizevars import FloatSize, as_expr, exact_div, is_symbolic, statically_equal
from ember.inductor.virtualized import CountHandler, ops, set_ops_handler

LOWERINGS: dict[OpOverload, Callable[..., Any]] = {}


def _aten():
    from ember.core import ops as core_ops

    return core_ops.aten


def register(*names: str) -> Callable:
    """Register a lowering for ``aten.<packet>.<overload>`` names (``"add.Tensor"``)."""

    def decorator(fn: Callable) -> Callable:
        a = _aten()
        for name in names:
            packet, _, overload = name.partition(".")
            try:
                op = getattr(getattr(a, packet), overload or "default")
            except AttributeError:  # an op this core does not have never reaches a graph
                continue
            LOWERINGS[op] = fn
        return fn

    return decorator


# -- helpers ---------------------------------------------------------------------------------------


def compute_dtype(dtype: Any) -> Any:
    """Half-precision values are computed in float32 (loads widen, stores narrow)."""
    return D.float32 if dtype in (D.float16, D.bfloat16) else dtype


def _count(box_loader: Callable[[Index], Any], ndim: int) -> int:
    handler = CountHandler()
    with set_ops_handler(handler):
        box_loader([sympy.Integer(0)] * ndim)
    return handler.count


def make_box(size, dtype, loader) -> TensorBox:
    size = tuple(as_expr(s) for s in size)
    return TensorBox(size, dtype, loader, None, _count(loader, len(size)))


def broadcast_shapes(*sizes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = max((len(s) for s in sizes), default=0)
    out = []
    for i in range(ndim):
        dims = {s[i - ndim + len(s)] for s in sizes if i - ndim + len(s) >= 0} - {1}
        if len(dims) > 1:
            if any(is_symbolic(d) for d in dims):
                raise NotImplementedError(f"broadcasting the symbolic shapes {sizes} together is not decided")
            raise RuntimeError(f"shapes {sizes} cannot be broadcast together")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def as_loader(value: Any, size: tuple[int, ...], dtype: Any) -> Callable[[Index], Any]:
    """A loader for ``value`` (a box, or a Python scalar) broadcast to ``size``, cast to ``dtype``."""
    if isinstance(value, TensorBox):
        inner, src = value.loader, value.size
        offset = len(size) - len(src)

        def loader(index: Index) -> Any:
            idx = [sympy.Integer(0) if n == 1 else index[offset + i] for i, n in enumerate(src)]
            return ops.to_dtype(inner(idx), compute_dtype(dtype)) if value.dtype != dtype else inner(idx)

        return loader
    return lambda index: scalar(value, compute_dtype(dtype))


def scalar(value: Any, dtype: Any) -> Any:
    """``ops`` value of a Python scalar or a size expression (read from the kernel's size arguments)."""
    value = as_expr(value)
    if isinstance(value, FloatSize):
        return ops.truediv(ops.index_expr(value.num, dtype), ops.index_expr(value.den, dtype))
    if is_symbolic(value):
        return ops.index_expr(value, dtype)
    return ops.constant(value, dtype)


def pointwise(ctx, inputs: list, fn: Callable[..., Any], in_dtype: Any = None) -> TensorBox:
    """The box computing ``fn(*values)`` elementwise over the broadcast of ``inputs``."""
    out_dtype = ctx.out_dtype
    size = broadcast_shapes(*[x.size for x in inputs if isinstance(x, TensorBox)])
    in_dtype = in_dtype or out_dtype
    if not statically_equal(numel(size), 1):  # a one-element input is loop-invariant: computed once, not per element
        inputs = [hoist_scalar(ctx, x) for x in inputs]
    loaders = [as_loader(x, size, in_dtype) for x in inputs]

    def loader(index: Index) -> Any:
        return fn(*[ld(index) for ld in loaders])

    return make_box(size, out_dtype, loader)


def hoist_scalar(ctx, x: Any) -> Any:
    """``x`` realized when it is a one-element value of more than one op (an optimizer's bias correction
    ``1 - beta ** step``), so that a loop reads it instead of recomputing it for each element."""
    if isinstance(x, TensorBox) and x.buffer is None and x.ops_count > 1 and statically_equal(numel(x.size), 1):
        return TensorBox.of(ctx.realize(x))
    return x


def promoted(inputs: list) -> Any:
    dtypes = [x.dtype for x in inputs if isinstance(x, TensorBox)]
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote_types(out, d)
    for x in inputs:
        if not isinstance(x, TensorBox) and isinstance(x, float) and not out.is_floating_point:
            out = D.float32
    return out


# -- pointwise ops ---------------------------------------------------------------------------------

_UNARY = {
    "abs": "abs", "neg": "neg", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos",
    "tan": "tan", "tanh": "tanh", "sinh": "sinh", "cosh": "cosh", "asin": "asin", "acos": "acos",
    "atan": "atan", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf", "erfc": "erfc",
    "sigmoid": "sigmoid", "reciprocal": "reciprocal", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "round", "sign": "sign", "relu": "relu", "bitwise_not": "bitwise_not",
}  # fmt: skip
_BINARY = {
    "add.Tensor": "add", "sub.Tensor": "sub", "mul.Tensor": "mul", "div.Tensor": "truediv",
    "maximum": "maximum", "minimum": "minimum", "atan2": "atan2", "pow.Tensor_Tensor": "pow",
    "pow.Tensor_Scalar": "pow", "remainder.Tensor": "remainder", "remainder.Scalar": "remainder",
    "bitwise_and.Tensor": "bitwise_and", "bitwise_or.Tensor": "bitwise_or", "bitwise_xor.Tensor": "bitwise_xor",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
}  # fmt: skip
_COMPARE = {
    "eq.Tensor": "eq", "eq.Scalar": "eq", "ne.Tensor": "ne", "ne.Scalar": "ne", "lt.Tensor": "lt",
    "lt.Scalar": "lt", "le.Tensor": "le", "le.Scalar": "le", "gt.Tensor": "gt", "gt.Scalar": "gt",
    "ge.Tensor": "ge", "ge.Scalar": "ge",
}  # fmt: skip


def _deferred(op_name: str) -> Callable:
    """``ops.<op_name>`` looked up when the body runs (under whichever handler is current then)."""
    return lambda *args: getattr(ops, op_name)(*args)


def _unary(op_name: str) -> Callable:
    def lower(ctx, x):
        return pointwise(ctx, [x], _deferred(op_name))

    return lower


def _binary(op_name: str) -> Callable:
    def lower(ctx, a, b, *, alpha=None):
        if alpha is not None and alpha != 1:
            b_dtype = compute_dtype(ctx.out_dtype)
            return pointwise(
                ctx, [a, b], lambda x, y: getattr(ops, op_name)(x, ops.mul(y, ops.constant(alpha, b_dtype)))
            )
        return pointwise(ctx, [a, b], _deferred(op_name))

    return lower


def _compare(op_name: str) -> Callable:
    def lower(ctx, a, b):
        return pointwise(ctx, [a, b], _deferred(op_name), in_dtype=promoted([a, b]))

    return lower


def _logical_not(ctx, x):
    return pointwise(ctx, [x], _deferred("logical_not"), in_dtype=D.bool_)


def _isnan(ctx, x):
    return pointwise(ctx, [x], _deferred("isnan"), in_dtype=x.dtype)


def _op(packet: str, overload: str = "default") -> OpOverload | None:
    try:
        return getattr(getattr(_aten(), packet), overload)
    except AttributeError:  # an op this core does not have never reaches a graph
        return None


def install_pointwise() -> None:
    """Register the table-driven pointwise lowerings (once)."""
    table: list[tuple[str, str, Callable]] = []
    table += [(name, "default", _unary(op)) for name, op in _UNARY.items()]
    table += [(*_split(name), _binary(op)) for name, op in _BINARY.items()]
    table += [(*_split(name), _compare(op)) for name, op in _COMPARE.items()]
    table += [(p, "Scalar", _binary(_BINARY[p + ".Tensor"])) for p in ("add", "sub", "mul", "div")]
    table += [("logical_not", "default", _logical_not), ("isnan", "default", _isnan)]
    for packet, overload, fn in table:
        op = _op(packet, overload)
        if op is not None:
            LOWERINGS.setdefault(op, fn)


def _split(name: str) -> tuple[str, str]:
    packet, _, overload = name.partition(".")
    return packet, overload or "default"


@register("where.self")
def where(ctx, cond, a, b):
    size = broadcast_shapes(*[x.size for x in (cond, a, b) if isinstance(x, TensorBox)])
    lc = as_loader(cond, size, D.bool_)
    la, lb = as_loader(a, size, ctx.out_dtype), as_loader(b, size, ctx.out_dtype)
    return make_box(size, ctx.out_dtype, lambda i: ops.where(lc(i), la(i), lb(i)))


@register("clamp.default")
def clamp(ctx, x, min=None, max=None):
    dt = compute_dtype(ctx.out_dtype)  # read now: bodies run after the node is lowered

    def fn(v):
        if min is not None:
            v = ops.maximum(v, ops.constant(min, dt))
        if max is not None:
            v = ops.minimum(v, ops.constant(max, dt))
        return v

    return pointwise(ctx, [x], fn)


@register("gelu.default")
def gelu(ctx, x, approximate="none"):
    dt = compute_dtype(ctx.out_dtype)

    def c(v):
        return ops.constant(v, dt)

    def fn(v):
        if approximate == "tanh":
            inner = ops.mul(c(math.sqrt(2 / math.pi)), ops.add(v, ops.mul(c(0.044715), ops.mul(v, ops.mul(v, v)))))
            return ops.mul(ops.mul(c(0.5), v), ops.add(c(1.0), ops.tanh(inner)))
        return ops.mul(ops.mul(c(0.5), v), ops.add(c(1.0), ops.erf(ops.mul(v, c(math.sqrt(0.5))))))

    return pointwise(ctx, [x], fn)


@register("_to_copy.default")
def to_copy(ctx, x, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    if device is not None and str(device) not in ("cpu", "cpu:0"):
        raise NotImplementedError(f"the C++ code generator handles cpu tensors only, not {device}")
    return pointwise(ctx, [x], lambda v: v)


@register("clone.default")
def clone(ctx, x, *, memory_format=None):
    return pointwise(ctx, [x], lambda v: v)


@register("full.default")
def full(ctx, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    dt = compute_dtype(ctx.out_dtype)
    return make_box(tuple(size), ctx.out_dtype, lambda i: scalar(fill_value, dt))


@register("full_like.default")
def full_like(ctx, x, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return full(ctx, x.size, fill_value)


@register("arange.start_step")
def arange(ctx, start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None):
    n = ctx.out_size()[0]
    dt = compute_dtype(ctx.out_dtype)
    if all(isinstance(v, int) or is_symbolic(v) for v in (start, step)):
        return make_box((n,), ctx.out_dtype, lambda i: ops.index_expr(i[0] * step + start, dt))
    return make_box(
        (n,),
        ctx.out_dtype,
        lambda i: ops.add(ops.constant(float(start), dt), ops.mul(ops.index_expr(i[0], dt), ops.constant(step, dt))),
    )


@register("scalar_tensor.default")
def scalar_tensor(ctx, value, *, dtype=None, layout=None, device=None, pin_memory=None):
    dt = compute_dtype(ctx.out_dtype)
    return make_box((), ctx.out_dtype, lambda i: scalar(value, dt))


@register("_softmax.default")
def softmax(ctx, x, dim, half_to_float):
    dim = dim % max(len(x.size), 1)
    mx = reduce_box(ctx, x, [dim], True, "max", x.dtype)
    shifted = _sub_exp(x, mx)
    total = reduce_box(ctx, shifted, [dim], True, "sum", compute_dtype(x.dtype))
    ls, lt = shifted.loader, as_loader(total, x.size, total.dtype)
    return make_box(x.size, ctx.out_dtype, lambda i: ops.truediv(ls(i), lt(i)))


@register("_log_softmax.default")
def log_softmax(ctx, x, dim, half_to_float):
    dim = dim % max(len(x.size), 1)
    dt = compute_dtype(x.dtype)
    mx = reduce_box(ctx, x, [dim], True, "max", x.dtype)
    total = reduce_box(ctx, _sub_exp(x, mx), [dim], True, "sum", dt)
    lx, lm, lt = as_loader(x, x.size, dt), as_loader(mx, x.size, dt), as_loader(total, x.size, dt)
    return make_box(x.size, ctx.out_dtype, lambda i: ops.sub(ops.sub(lx(i), lm(i)), ops.log(lt(i))))


def _sub_exp(x: TensorBox, mx: TensorBox) -> TensorBox:
    lx, lm = as_loader(x, x.size, compute_dtype(x.dtype)), as_loader(mx, x.size, compute_dtype(x.dtype))
    return make_box(x.size, compute_dtype(x.dtype), lambda i: ops.exp(ops.sub(lx(i), lm(i))))


# -- reductions ------------------------------------------------------------------------------------


def reduce_box(ctx, x: TensorBox, dims, keepdim: bool, reduction_type: str, dtype, welford_output: int = 0):
    """Realize the reduction of ``x`` over ``dims`` as a buffer; its box (with ``keepdim``)."""
    ndim = len(x.size)
    dims = sorted({d % max(ndim, 1) for d in dims}) if dims else list(range(ndim))
    kept = [d for d in range(ndim) if d not in dims]
    size = tuple(x.size[d] for d in kept)
    rsize = tuple(x.size[d] for d in dims)
    loader = as_loader(x, x.size, dtype) if reduction_type not in ("argmax", "argmin") else x.loader

    def body(index: Index, rindex: Index) -> Any:
        full = [sympy.Integer(0)] * ndim
        for d, v in zip(kept, index, strict=True):
            full[d] = v
        for d, v in zip(dims, rindex, strict=True):
            full[d] = v
        return loader(full)

    out_dtype = D.int64 if reduction_type in ("argmax", "argmin") else dtype
    buf = ctx.new_buffer(size, out_dtype, body, rsize, reduction_type, welford_output=welford_output)
    box = TensorBox.of(buf)
    if keepdim:
        return unsqueeze_dims(box, dims, ndim)
    return box


def unsqueeze_dims(box: TensorBox, dims: list[int], ndim: int) -> TensorBox:
    kept = [d for d in range(ndim) if d not in dims]
    size = tuple(1 if d in dims else box.size[kept.index(d)] for d in range(ndim))
    inner = box.loader
    return TensorBox(size, box.dtype, lambda i: inner([i[d] for d in kept]), None, box.ops_count)


def _dims(x, dim):
    if dim is None or dim == []:
        return list(range(len(x.size)))
    return [dim] if isinstance(dim, int) else list(dim)


@register("sum.dim_IntList")
def sum_dim(ctx, x, dim, keepdim=False, *, dtype=None):
    return reduce_box(ctx, x, _dims(x, dim), keepdim, "sum", ctx.out_dtype)


@register("sum.default")
def sum_all(ctx, x, *, dtype=None):
    return reduce_box(ctx, x, [], False, "sum", ctx.out_dtype)


@register("prod.dim_int")
def prod_dim(ctx, x, dim, keepdim=False, *, dtype=None):
    return reduce_box(ctx, x, [dim], keepdim, "prod", ctx.out_dtype)


@register("mean.dim")
def mean_dim(ctx, x, dim, keepdim=False, *, dtype=None):
    dims = _dims(x, dim)
    n = numel([x.size[d % max(len(x.size), 1)] for d in dims]) if x.size else 1
    total = reduce_box(ctx, x, dims, keepdim, "sum", compute_dtype(ctx.out_dtype))
    ld = total.loader
    dt = compute_dtype(ctx.out_dtype)
    return make_box(total.size, ctx.out_dtype, lambda i: ops.truediv(ld(i), _count_value(n, dt)))


@register("mean.default")
def mean_all(ctx, x, *, dtype=None):
    return mean_dim(ctx, x, None)


@register("prod.default")
def prod_all(ctx, x, *, dtype=None):
    return reduce_box(ctx, x, [], False, "prod", ctx.out_dtype)


@register("max.default")
def max_all(ctx, x):
    return reduce_box(ctx, x, [], False, "max", ctx.out_dtype)


@register("min.default")
def min_all(ctx, x):
    return reduce_box(ctx, x, [], False, "min", ctx.out_dtype)


@register("amax.default")
def amax(ctx, x, dim=(), keepdim=False):
    return reduce_box(ctx, x, _dims(x, dim), keepdim, "max", ctx.out_dtype)


@register("amin.default")
def amin(ctx, x, dim=(), keepdim=False):
    return reduce_box(ctx, x, _dims(x, dim), keepdim, "min", ctx.out_dtype)


@register("argmax.default")
def argmax(ctx, x, dim=None, keepdim=False):
    if dim is None:
        x = view(ctx, x, [numel(x.size)])
        dim = 0
    return reduce_box(ctx, x, [dim], keepdim, "argmax", compute_dtype(x.dtype))


@register("argmin.default")
def argmin(ctx, x, dim=None, keepdim=False):
    if dim is None:
        x = view(ctx, x, [numel(x.size)])
        dim = 0
    return reduce_box(ctx, x, [dim], keepdim, "argmin", compute_dtype(x.dtype))


def _count_value(n: Any, dt: Any) -> Any:
    """A count of elements as a float value (a size expression is read at run time)."""
    return ops.index_expr(n, dt) if is_symbolic(n) else ops.constant(float(n), dt)


def _var_box(ctx, x, dims, keepdim, correction, dtype):
    dims = _dims(x, dims)
    n = numel([x.size[d % max(len(x.size), 1)] for d in dims]) if x.size else 1
    m2 = reduce_box(ctx, x, dims, keepdim, "welford", dtype, welford_output=1)
    ld = m2.loader
    denom = sympy.Max(0, n - correction) if is_symbolic(n) else max(0, n - correction)
    return make_box(m2.size, dtype, lambda i: ops.truediv(ld(i), _count_value(denom, dtype)))


@register("var.correction")
def var(ctx, x, dim=None, *, correction=None, keepdim=False):
    correction = 1 if correction is None else correction
    return _var_box(ctx, x, dim, keepdim, correction, compute_dtype(ctx.out_dtype))


@register("native_layer_norm.default")
def native_layer_norm(ctx, x, normalized_shape, weight, bias, eps):
    ndim, k = len(x.size), len(normalized_shape)
    dims = list(range(ndim - k, ndim))
    dt = compute_dtype(x.dtype)
    # two passes over each row (sum, then the sum of squared deviations): both vectorize, unlike a
    # Welford update, and the row is still in cache for the second
    n = numel([x.size[d] for d in dims])
    total = reduce_box(ctx, x, dims, True, "sum", dt)
    lt = total.loader
    mean = TensorBox.of(ctx.realize(make_box(total.size, dt, lambda i: ops.truediv(lt(i), _count_value(n, dt)))))
    lx0, lm0 = as_loader(x, x.size, dt), as_loader(mean, x.size, dt)

    def centered_sq(i):
        d = ops.sub(lx0(i), lm0(i))
        return ops.mul(d, d)

    m2 = reduce_box(ctx, make_box(x.size, dt, centered_sq), dims, True, "sum", dt)
    lm2 = m2.loader
    rstd = make_box(
        m2.size, dt, lambda i: ops.rsqrt(ops.add(ops.truediv(lm2(i), _count_value(n, dt)), ops.constant(eps, dt)))
    )
    lx, lmean, lrstd = as_loader(x, x.size, dt), as_loader(mean, x.size, dt), as_loader(rstd, x.size, dt)
    lw = as_loader(weight, x.size, dt) if weight is not None else None
    lb = as_loader(bias, x.size, dt) if bias is not None else None

    def out(i):
        v = ops.mul(ops.sub(lx(i), lmean(i)), lrstd(i))
        if lw is not None:
            v = ops.mul(v, lw(i))
        if lb is not None:
            v = ops.add(v, lb(i))
        return v

    return make_box(x.size, x.dtype, out), mean, rstd


# -- views: index arithmetic -----------------------------------------------------------------------


def _view_groups(old: list[int], new: list[int]) -> list[tuple[list[int], list[int]]]:
    """Pair runs of old and new dims with equal products (a reshape moves elements within a run only)."""
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        gi, gj, po, pn = [], [], 1, 1
        if i < len(old):
            po, i = po * old[i], i + 1
            gi.append(i - 1)
        if j < len(new):
            pn, j = pn * new[j], j + 1
            gj.append(j - 1)
        while po != pn and (i < len(old) or j < len(new)):
            if (po < pn and i < len(old)) or j >= len(new):
                po, i = po * old[i], i + 1
                gi.append(i - 1)
            else:
                pn, j = pn * new[j], j + 1
                gj.append(j - 1)
        groups.append((gi, gj))
    return groups


def _view_loader(ctx, x: TensorBox, size: tuple[int, ...]) -> Callable[[Index], Any]:
    """Row-major reshape, run by run, so that most indexes stay affine."""
    old, new = list(x.size), list(size)
    if any(is_symbolic(n) for n in old + new):
        # runs are found from the sizes' values at trace time, and must hold for every size
        groups = _view_groups([ctx.hint(n) for n in old], [ctx.hint(n) for n in new])
        for gi, gj in groups:
            if not statically_equal(numel([old[i] for i in gi]), numel([new[j] for j in gj])):
                raise NotImplementedError(f"a view from {tuple(old)} to {tuple(size)} is not decided for every size")
    else:
        groups = _view_groups(old, new)
    inner = x.loader

    def loader(index: Index) -> Any:
        out: list[sympy.Expr] = [sympy.Integer(0)] * len(old)
        for gi, gj in groups:
            flat = sympy.Integer(0)
            for jj in gj:
                flat = flat * new[jj] + index[jj]
            for ii in reversed(gi[1:]):
                out[ii] = sympy.Mod(flat, old[ii]) if len(gj) > 1 or len(gi) > 1 else flat
                flat = sympy.floor(flat / old[ii])
            if gi:
                out[gi[0]] = flat
        return inner(out)

    return loader


def _infer_size(size, total):
    size = list(size)
    if any(s == -1 for s in size):
        at = next(i for i, s in enumerate(size) if s == -1)
        known = numel([s for s in size if s != -1])
        size[at] = exact_div(total, known) if known != 0 else 0
    return tuple(as_expr(s) for s in size)


@register("view.default", "reshape.default", "_unsafe_view.default")
def view(ctx, x, size):
    size = _infer_size(size, numel(x.size))
    if not statically_equal(numel(size), numel(x.size)):
        if is_symbolic(numel(size)) or is_symbolic(numel(x.size)):
            raise NotImplementedError(f"a view from {x.size} to {size} is not decided for every size")
        raise RuntimeError(f"shape '{list(size)}' is invalid for input of size {numel(x.size)}")
    return TensorBox(size, x.dtype, _view_loader(ctx, x, size), None, x.ops_count)


@register("permute.default")
def permute(ctx, x, dims):
    ndim = len(x.size)
    dims = [d % ndim for d in dims]
    inner = x.loader

    def loader(index):
        out = [None] * ndim
        for k, d in enumerate(dims):
            out[d] = index[k]
        return inner(out)

    return TensorBox(tuple(x.size[d] for d in dims), x.dtype, loader, None, x.ops_count)


@register("t.default")
def t(ctx, x):
    return permute(ctx, x, list(reversed(range(len(x.size)))))


@register("transpose.int")
def transpose(ctx, x, d0, d1):
    dims = list(range(len(x.size)))
    d0, d1 = d0 % len(dims), d1 % len(dims)
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute(ctx, x, dims)


@register("expand.default")
def expand(ctx, x, size, *, implicit=False):
    size = tuple(x.size[i - len(size) + len(x.size)] if s == -1 else s for i, s in enumerate(size))
    return TensorBox(size, x.dtype, as_loader(x, size, x.dtype), None, x.ops_count)


@register("slice.Tensor")
def slice_(ctx, x, dim=0, start=None, end=None, step=1):
    dim = dim % len(x.size)
    n = x.size[dim]
    start, end = as_expr(start), as_expr(end)
    if any(is_symbolic(v) for v in (n, start, end)):
        start, length = _symbolic_slice(n, start, step, ctx.out_size()[dim])
    else:
        start, end, _ = slice(start, end, step).indices(n)
        length = max(0, (end - start + step - 1) // step)
    inner = x.loader

    def loader(index):
        idx = list(index)
        idx[dim] = idx[dim] * step + start
        return inner(idx)

    size = list(x.size)
    size[dim] = length
    return TensorBox(tuple(size), x.dtype, loader, None, x.ops_count)


def _symbolic_slice(n: Any, start: Any, step: int, length: Any) -> tuple[Any, Any]:
    """The first index and the length of a slice of a dimension of size ``n`` (symbolic); the length
    comes from the node's value, which the meta kernel worked out."""
    start = 0 if start is None else start
    if isinstance(start, int) and start < 0:
        start = sympy.Max(n + start, 0)
    elif is_symbolic(start):
        start = sympy.Min(start, n)
    return start, as_expr(length)


@register("select.int")
def select(ctx, x, dim, index):
    dim = dim % len(x.size)
    index = as_expr(index)
    if is_symbolic(x.size[dim]) or is_symbolic(index):
        index = index + x.size[dim] if isinstance(index, int) and index < 0 else index
    else:
        index = index % x.size[dim]
    inner = x.loader
    size = x.size[:dim] + x.size[dim + 1 :]
    return TensorBox(size, x.dtype, lambda i: inner([*i[:dim], sympy.sympify(index), *i[dim:]]), None, x.ops_count)


@register("unsqueeze.default")
def unsqueeze(ctx, x, dim):
    dim = dim % (len(x.size) + 1)
    inner = x.loader
    size = x.size[:dim] + (1,) + x.size[dim:]
    return TensorBox(size, x.dtype, lambda i: inner([*i[:dim], *i[dim + 1 :]]), None, x.ops_count)


@register("squeeze.dim", "squeeze.dims", "squeeze.default")
def squeeze(ctx, x, dim=None):
    ndim = len(x.size)
    if dim is None:
        dims = [d for d in range(ndim) if x.size[d] == 1]
    else:
        dims = [d % max(ndim, 1) for d in ([dim] if isinstance(dim, int) else dim)]
        dims = [d for d in dims if ndim and x.size[d] == 1]
    keep = [d for d in range(ndim) if d not in dims]
    inner = x.loader

    def loader(index):
        out = [sympy.Integer(0)] * ndim
        for k, d in enumerate(keep):
            out[d] = index[k]
        return inner(out)

    return TensorBox(tuple(x.size[d] for d in keep), x.dtype, loader, None, x.ops_count)


@register("alias.default")
def alias(ctx, x):
    return x


def layout_for(size: tuple[int, ...]) -> Layout:
    return Layout(tuple(size), contiguous_strides(size))


install_pointwise()

# lowerings kept in modules of their own register themselves when imported
from ember.inductor import lowering_random, lowering_scan  # noqa: E402, F401

__all__ = ["LOWERINGS", "ComputedBuffer", "install_pointwise", "register"]
