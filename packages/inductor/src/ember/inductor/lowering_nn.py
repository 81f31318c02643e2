"""Lowerings of the neural-network ops that reach training graphs undecomposed.

Batch norm (with the running statistics it updates), ``cat``, and ``max_pool2d`` with its indices
and backward are written as pointwise and reduction boxes (``gather`` is an indirect load:
``lowering_indirect.py``); what they cannot express (overlapping pooling windows, padding) raises
``NotImplementedError``, and the op falls back to its eager kernel with
that reason logged (``perf_hints``).

Every load a kernel makes runs unconditionally (``where`` picks among values already loaded), so
the lowerings here only ever form in-bounds indexes: ``cat`` wraps each input's index into its
range with a modulo rather than reading past its ends.
"""

from __future__ import annotations

from typing import Any

import sympy

from ember.core import dtypes as D
from ember.inductor.ir import Index, TensorBox, numel
from ember.inductor.lowering import as_loader, compute_dtype, make_box, reduce_box, register
from ember.inductor.virtualized import ops


def _static(what: str, *boxes: Any) -> None:
    """These lowerings are written for static sizes: over symbolic ones the op runs as an extern call."""
    for box in boxes:
        if box is not None and not all(isinstance(n, int) for n in box.size):
            raise NotImplementedError(f"{what} over symbolic sizes runs as an extern call of its eager kernel")


def _assign(target: TensorBox, value: TensorBox) -> None:
    """``target`` (an op's in-place argument) now holds ``value``: later readers of the graph node
    that made ``target`` (the graph's outputs, for a functionalized running statistic) see it."""
    target.size, target.dtype, target.loader = value.size, value.dtype, value.loader
    target.buffer, target.ops_count = None, value.ops_count


def _per_channel(box: TensorBox, ndim: int) -> TensorBox:
    """A ``(C,)`` box seen as ``(1, C, 1, ...)`` against an ``ndim``-dimensional input."""
    inner = box.loader
    size = tuple(box.size[0] if d == 1 else 1 for d in range(ndim))
    return TensorBox(size, box.dtype, lambda i: inner([i[1]]), None, box.ops_count)


@register("_native_batch_norm_legit.no_stats")
def batch_norm_no_stats(ctx, x, weight, bias, training, momentum, eps):
    return batch_norm(ctx, x, weight, bias, None, None, training, momentum, eps)


@register("_native_batch_norm_legit_no_training.default")
def batch_norm_no_training(ctx, x, weight, bias, running_mean, running_var, momentum, eps):
    return batch_norm(ctx, x, weight, bias, running_mean, running_var, False, momentum, eps)


@register("_native_batch_norm_legit.default")
def batch_norm(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
    _static("batch norm", x)
    ndim = len(x.size)
    if ndim < 2:
        raise NotImplementedError("batch norm of an input with fewer than 2 dimensions")
    for stat in (running_mean, running_var) if training else ():
        if stat is not None and stat.buffer is not None and stat.buffer.name.startswith("arg"):
            raise NotImplementedError("batch norm updating a graph input's running statistics in place")
    dt = compute_dtype(x.dtype)
    dims = [0, *range(2, ndim)]
    n = numel([x.size[d] for d in dims])
    lx = as_loader(x, x.size, dt)
    if training:
        total = reduce_box(ctx, x, dims, False, "sum", dt)
        lt = total.loader
        mean = TensorBox.of(ctx.realize(make_box(total.size, dt, lambda i: ops.truediv(lt(i), ops.constant(n, dt)))))
        lmc = as_loader(_per_channel(mean, ndim), x.size, dt)

        def centered_sq(i: Index) -> Any:
            d = ops.sub(lx(i), lmc(i))
            return ops.mul(d, d)

        m2 = reduce_box(ctx, make_box(x.size, dt, centered_sq), dims, False, "sum", dt)
        lm2 = m2.loader
        var = make_box(m2.size, dt, lambda i: ops.truediv(lm2(i), ops.constant(n, dt)))
        if running_mean is not None:
            _update_running(running_mean, mean, momentum, 1.0)
        if running_var is not None:
            _update_running(running_var, var, momentum, n / max(n - 1, 1))
    else:
        if running_mean is None or running_var is None:
            raise NotImplementedError("batch norm in evaluation without running statistics")
        mean, var = running_mean, running_var
    lv = var.loader
    rstd = make_box(var.size, dt, lambda i: ops.rsqrt(ops.add(lv(i), ops.constant(eps, dt))))
    lmean = as_loader(_per_channel(mean, ndim), x.size, dt)
    lrstd = as_loader(_per_channel(rstd, ndim), x.size, dt)
    lw = as_loader(_per_channel(weight, ndim), x.size, dt) if weight is not None else None
    lb = as_loader(_per_channel(bias, ndim), x.size, dt) if bias is not None else None

    def out(i: Index) -> Any:
        v = ops.mul(ops.sub(lx(i), lmean(i)), lrstd(i))
        if lw is not None:
            v = ops.mul(v, lw(i))
        if lb is not None:
            v = ops.add(v, lb(i))
        return v

    result = make_box(x.size, x.dtype, out)
    if training:
        return result, mean, rstd
    # evaluation: eager returns empty statistics
    return (
        result,
        make_box((0,), x.dtype, lambda i: ops.constant(0.0, dt)),
        make_box((0,), x.dtype, lambda i: ops.constant(0.0, dt)),
    )


def _update_running(stat: TensorBox, batch: TensorBox, momentum: float, factor: float) -> None:
    dt = compute_dtype(stat.dtype)
    old, new = stat.loader, as_loader(batch, stat.size, stat.dtype)

    def updated(i: Index) -> Any:
        keep = ops.mul(old(i), ops.constant(1.0 - momentum, dt))
        return ops.add(keep, ops.mul(new(i), ops.constant(momentum * factor, dt)))

    _assign(stat, make_box(stat.size, stat.dtype, updated))


@register("cat.default")
def cat(ctx, tensors, dim=0):
    parts = [t for t in tensors if not (len(t.size) == 1 and t.size[0] == 0)]
    if not parts:
        raise NotImplementedError("cat of empty tensors only")
    ndim = len(parts[0].size)
    dim = dim % ndim
    size = list(parts[0].size)
    size[dim] = sum(t.size[dim] for t in parts)
    out_dtype = ctx.out_dtype
    pieces = []
    offset = 0
    for t in parts:
        if t.size[dim]:
            pieces.append((offset, t.size[dim], as_loader(t, t.size, out_dtype)))
        offset += t.size[dim]

    def loader(i: Index) -> Any:
        value = None
        for start, length, ld in reversed(pieces):
            # wrapped into [0, length): equal to i - start inside the piece, in bounds outside it
            local = list(i)
            local[dim] = sympy.Mod(i[dim] + (length - start % length), length) if len(pieces) > 1 else i[dim]
            v = ld(local)
            if value is None:
                value = v
            else:
                cond = ops.lt(ops.index_expr(i[dim], D.int64), ops.index_expr(sympy.sympify(start + length), D.int64))
                value = ops.where(cond, v, value)
        return value

    return make_box(tuple(size), out_dtype, loader)


def _pool_params(x, kernel_size, stride, padding, dilation, ceil_mode):
    def pair(v, default):
        v = default if v is None or (isinstance(v, list | tuple) and len(v) == 0) else v
        v = [v] if isinstance(v, int) else list(v)
        return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])

    k = pair(kernel_size, None)
    s = pair(stride, k)
    p = pair(padding, 0)
    d = pair(dilation, 1)
    if p != (0, 0) or d != (1, 1):
        raise NotImplementedError("max_pool2d with padding or dilation (its windows would read out of bounds)")
    h, w = x.size[-2], x.size[-1]
    out = ((h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1)
    if ceil_mode and ((h - k[0]) % s[0] or (w - k[1]) % s[1]):
        raise NotImplementedError("max_pool2d with ceil_mode and a partial last window")
    return k, s, out


# Windows of at most this many taps are scanned as a chain of pointwise selects (one vectorized
# pass, no buffers for the value and the index); larger ones as reductions.
_UNROLLED_WINDOW = 16


def _window_scan(lx, nl: int, k, s, dt):
    """(value, tap) of eager's window scan at output index ``i``: start at -inf with tap 0, and take
    each tap in row-major order that is greater or NaN (so the first maximum, but the last NaN)."""

    def scan(i: Index) -> tuple[Any, Any]:
        best, tap = ops.constant(float("-inf"), dt), ops.constant(0, D.int64)
        for r in range(k[0] * k[1]):
            v = lx([*i[:nl], i[nl] * s[0] + r // k[1], i[nl + 1] * s[1] + r % k[1]])
            take = ops.logical_or(ops.gt(v, best), ops.isnan(v))
            best, tap = ops.where(take, v, best), ops.where(take, ops.constant(r, D.int64), tap)
        return best, tap

    return scan


@register("max_pool2d_with_indices.default")
def max_pool2d_with_indices(ctx, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    _static("max_pool2d", x)
    k, s, (oh, ow) = _pool_params(x, kernel_size, stride, padding, dilation, ceil_mode)
    lead = x.size[:-2]
    size = (*lead, oh, ow)
    nl = len(lead)
    lx = x.loader
    w = x.size[-1]

    def flat(i: Index, tap: Any) -> Any:  # the window's linear index: row tap // kw, column tap % kw
        kw = ops.constant(k[1], D.int64)
        row = ops.add(ops.index_expr(i[nl] * s[0], D.int64), ops.floordiv(tap, kw))
        col = ops.add(ops.index_expr(i[nl + 1] * s[1], D.int64), ops.remainder(tap, kw))
        return ops.add(ops.mul(row, ops.constant(w, D.int64)), col)

    if x.dtype.is_floating_point and k[0] * k[1] <= _UNROLLED_WINDOW:
        scan = _window_scan(lx, nl, k, s, compute_dtype(x.dtype))
        values = make_box(size, x.dtype, lambda i: scan(i)[0])
        return values, make_box(size, D.int64, lambda i: flat(i, scan(i)[1]))

    def window(i: Index, r: Index) -> Any:
        return lx([*i[:nl], i[nl] * s[0] + r[0], i[nl + 1] * s[1] + r[1]])

    def last_nan(i: Index, r: Index) -> Any:  # the window backwards, 1 where NaN
        v = lx([*i[:nl], i[nl] * s[0] + (k[0] - 1 - r[0]), i[nl + 1] * s[1] + (k[1] - 1 - r[1])])
        return ops.to_dtype(ops.isnan(v), D.float32)

    values = ctx.new_buffer(size, x.dtype, window, k, "max")
    arg = ctx.new_buffer(size, D.int64, window, k, "argmax")
    la, lv = TensorBox.of(arg).loader, TensorBox.of(values).loader
    # eager's window scan keeps the first maximum, but the last NaN: a window with a NaN takes its
    # last one, found as the first in the window read backwards
    nan_arg = ctx.new_buffer(size, D.int64, last_nan, k, "argmax") if x.dtype.is_floating_point else None
    ln = TensorBox.of(nan_arg).loader if nan_arg is not None else None
    last = k[0] * k[1] - 1

    def flat_index(i: Index) -> Any:
        r = la(i)
        if ln is not None:
            r = ops.where(ops.isnan(lv(i)), ops.sub(ops.constant(last, D.int64), ln(i)), r)
        return flat(i, r)

    return TensorBox.of(values), make_box(size, D.int64, flat_index)


@register("max_pool2d_with_indices_backward.default")
def max_pool2d_with_indices_backward(ctx, grad, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
    _static("max_pool2d's backward", grad, x)
    k, s, (oh, ow) = _pool_params(x, kernel_size, stride, padding, dilation, ceil_mode)
    if k != s:
        raise NotImplementedError("max_pool2d backward with overlapping or gapped windows (stride != kernel size)")
    h, w = x.size[-2], x.size[-1]
    if oh * s[0] != h or ow * s[1] != w:
        raise NotImplementedError("max_pool2d backward where the windows do not tile the input")
    nl = len(x.size) - 2
    dt = compute_dtype(ctx.out_dtype)
    lg, li = as_loader(grad, grad.size, ctx.out_dtype), indices.loader

    def body(i: Index) -> Any:
        src = [*i[:nl], sympy.floor(i[nl] / s[0]), sympy.floor(i[nl + 1] / s[1])]
        here = ops.index_expr(i[nl] * w + i[nl + 1], D.int64)
        return ops.where(ops.eq(li(src), here), lg(src), ops.constant(0.0, dt))

    return make_box(x.size, ctx.out_dtype, body)
