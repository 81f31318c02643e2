"""Samples for the functions PyTorch builds from other ops (``ember.core.aten.*.everyday``): reductions
and scans (trace, dist, renorm, quantile, cummax, logcumsumexp, histogram), pointwise ones
(float_power, ldexp, sgn, frexp, gcd, lcm, nextafter) and shape and indexing ones (diag_embed,
tensordot, inner, repeat_interleave, isin, unravel_index, combinations, index_reduce, ...).

Entries whose result depends on the values (``histogram``'s range, ``gcd``'s loop, a tensor of
repeats) have no meta result, as in PyTorch where they synchronize on the data.
"""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, layouts_of, make

F = ("float32", "float64")
FI = ("float32", "float64", "int64")


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _method(name):
    return lambda lib, self, *a, **k: getattr(self, name)(*a, **k)


def _ones(*shape):
    return T(np.ones(shape, np.float32))


# -- reductions and scans ----------------------------------------------------------------------------------


def _trace(dtype, rng):
    return [Sample((a,), name=str(a)) for a in layouts_of((3, 4), dtype, rng)] + [
        Sample((make((0, 2), dtype, rng),), name="empty")
    ]


def _dist(dtype, rng):
    a, b = make((3, 4), dtype, rng), make((4,), dtype, rng)
    return [Sample((a, b, p), name=f"p={p}") for p in (2, 1, 3, float("inf"), 0)]


def _renorm(dtype, rng):
    a = make((3, 4, 2), dtype, rng)
    return [Sample((a, 2, 0, 5.0), name="p=2 dim 0"), Sample((a, 1, -1, 4.0), name="p=1 dim -1")]


def _quantile(dtype, rng):
    a = make((4, 5), dtype, rng)
    return [
        Sample((a, 0.3), name="all, scalar q"),
        Sample((a, 0.5, 1, True), name="dim 1 keepdim"),
        *(Sample((a, 0.4, 1), {"interpolation": m}, name=m) for m in ("lower", "higher", "midpoint", "nearest")),
    ]


def _quantile_tensor_q(dtype, rng):
    a = make((4, 5), dtype, rng)
    return [Sample((a, T(np.array([0.0, 0.25, 1.0], dtype)), 0), name="q vector dim 0")]


def _nanquantile(dtype, rng):
    a = make((4, 5), dtype, rng).array.copy()
    a[1, 2] = a[3, 0] = np.nan
    return [Sample((T(a), 0.3, 1), name="with NaN"), Sample((T(a), 0.7), name="all")]


def _cum(dtype, rng):
    out = [Sample((a, 1), name=f"{a} dim 1") for a in layouts_of((3, 5), dtype, rng, low=-3, high=3)]
    out.append(Sample((make((4,), dtype, rng), 0), name="1-d"))
    if dtype.startswith("float"):
        a = make((2, 5), dtype, rng).array.copy()
        a[0, 2] = np.nan
        out.append(Sample((T(a), 1), name="NaN"))
    return out


def _logcumsumexp(dtype, rng):
    return [
        Sample((make((3, 5), dtype, rng, -2, 2), 1), name="dim 1"),
        Sample((make((4,), dtype, rng, -2, 2), 0), name="1-d"),
    ]


def _logcumsumexp_large(dtype, rng):
    return [Sample((T(make((3, 5), dtype, rng).array * 30), 0), name="large")]


def _histogram(dtype, rng):
    a = make((10,), dtype, rng)
    return [
        Sample((a, 3), {"range": (-2.0, 5.0), "weight": make((10,), dtype, rng, low=0, high=2)}, name="weights"),
        Sample((a, T(np.array([-9, -1, 0, 3, 9], dtype))), {"density": True}, name="edges, density"),
    ]


def _histogram_auto_range(dtype, rng):
    return [Sample((make((10,), dtype, rng), 4), name="4 bins")]


def _histogramdd(dtype, rng):
    a = make((12, 2), dtype, rng)
    return [
        Sample((a, 3), {"range": [-5.0, 5.0, -9.0, 9.0]}, name="range"),
        Sample(
            (a, [T(np.array([-9, 0, 9], dtype)), T(np.array([-9, -3, 3, 9], dtype))]),
            {"weight": make((12,), dtype, rng, low=0, high=2), "density": True},
            name="edges, weights, density",
        ),
    ]


def _histogramdd_auto_range(dtype, rng):
    return [Sample((make((4, 5, 3), dtype, rng), [2, 3, 4]), name="bins per dim")]


# -- pointwise ---------------------------------------------------------------------------------------------


def _binary(dtype, rng, low=-9, high=9):
    return [
        Sample((make((3, 4), dtype, rng, low, high), make((3, 4), dtype, rng, low, high)), name="same shape"),
        Sample((make((3, 4), dtype, rng, low, high), make((4,), dtype, rng, low, high)), name="broadcast"),
    ]


def _float_power(dtype, rng):
    return [
        Sample((make((3, 4), dtype, rng, 1, 4), make((3, 4), dtype, rng, -2, 2)), name="tensors"),
        Sample((make((3, 4), dtype, rng, 1, 4), 2), name="scalar exponent"),
    ]


def _ldexp(dtype, rng):
    return [Sample((make((3, 4), dtype, rng), T(np.array([2, 0, 1, 3], np.int64))), name="int exponents")]


def _unary(dtype, rng):
    return [Sample((a,), name=str(a)) for a in layouts_of((3, 4), dtype, rng)]


def _frexp(dtype, rng):
    values = np.array([0.0, -0.0, 1.0, 0.5, 3.0, -7.25, 1e-30, np.inf, -np.inf, np.nan, 1024.0, 0.1], dtype)
    return [Sample((T(values),), name="special values")]


def _frexp_random(dtype, rng):
    return [Sample((make((3, 4), dtype, rng),), name="random")]


def _nextafter(dtype, rng):
    x = np.array([0.0, -0.0, 1.0, 0.5, 3.0, -7.25, np.inf, -np.inf, np.nan, 1024.0, -1.0], dtype)
    y = np.array([1.0, -1.0, 2.0, 0.0, 3.0, 0.0, 0.0, 1.0, 1.0, np.inf, 0.0], dtype)
    return [Sample((T(x), T(y)), name="special values")]


# -- shape and indexing ------------------------------------------------------------------------------------


def _diag_embed(dtype, rng):
    a = make((2, 3), dtype, rng)
    return [
        Sample((a,), name="default"),
        Sample((a, 1, 0, 2), name="offset 1 dims 0, 2"),
        Sample((a, -2, -1, 0), name="offset -2 dims -1, 0"),
    ]


def _diagflat(dtype, rng):
    return [Sample((make((2, 2), dtype, rng), k), name=f"k={k}") for k in (0, 1, -2)]


def _tensordot(dtype, rng):
    a, b = make((2, 3, 4), dtype, rng), make((3, 4, 5), dtype, rng)
    return [
        Sample((a, b), name="dims=2"),
        Sample((a, make((4, 2), dtype, rng), 1), name="dims=1"),
        Sample((a, b, ([1, 2], [0, 1])), name="lists"),
        Sample((a, make((2, 5), dtype, rng), 0), name="outer"),
    ]


def _inner(dtype, rng):
    return [
        Sample((make((2, 4), dtype, rng), make((3, 4), dtype, rng)), name="matrices"),
        Sample((make((4,), dtype, rng), make((4,), dtype, rng)), name="vectors"),
        Sample((make((2, 4), dtype, rng), make((), dtype, rng)), name="scalar"),
    ]


def _narrow_copy(dtype, rng):
    return [Sample((a, 1, 1, 2), name=str(a)) for a in layouts_of((3, 4), dtype, rng)]


def _repeat_interleave(dtype, rng):
    a = make((2, 3), dtype, rng)
    return [Sample((a, 2), name="flat"), Sample((a, 3, 1), name="dim 1"), Sample((a, 2, -2), name="dim -2")]


def _repeat_interleave_tensor(dtype, rng):
    a = make((3, 2), dtype, rng)
    return [Sample((a, T(np.array([1, 0, 2], np.int64)), 0), name="tensor repeats")]


def _isin(dtype, rng):
    a, b = make((3, 4), dtype, rng, -4, 4), make((5,), dtype, rng, -4, 4)
    return [
        Sample((a, b), name="tensors"),
        Sample((a, b), {"invert": True}, name="invert"),
        Sample((a, 2), name="scalar test"),
    ]


def _unravel(dtype, rng):
    return [
        Sample((T(np.array([0, 5, 11, -1, -12], np.int64)), (3, 4)), name="2-d"),
        Sample((T(np.int64(7)), 9), name="1-d"),
    ]


def _combinations(dtype, rng):
    a = make((4,), dtype, rng)
    return [Sample((a,), name="r=2"), Sample((a, 3), name="r=3"), Sample((a, 2, True), name="with replacement")]


def _index_reduce(dtype, rng):
    self_, source = make((3, 2), dtype, rng, 1, 4), make((4, 2), dtype, rng, 1, 4)
    index = T(np.array([0, 2, 0, 1], np.int64))
    out = []
    for reduce in ("prod", "mean", "amax", "amin"):
        out.append(Sample((self_, 0, index, source, reduce), name=reduce))
        out.append(Sample((self_, 0, index, source, reduce), {"include_self": False}, name=f"{reduce} no self"))
    return out


def _broadcast_tensors(dtype, rng):
    return [Sample(([make((3, 1), dtype, rng), make((4,), dtype, rng), make((), dtype, rng)],), name="three")]


def _split_with_sizes(dtype, rng):
    return [
        Sample((make((5, 3), dtype, rng), [2, 0, 3]), name="dim 0"),
        Sample((make((2, 3), dtype, rng), [1, 2], 1), name="dim 1"),
    ]


def _unary_errors(message):
    return lambda: [ErrorSample(Sample((_ones(2, 2, 2),)), RuntimeError, message)]


OPS = [
    OpInfo("trace", _call("trace"), FI, _trace, _unary_errors("expected a matrix")),
    OpInfo("Tensor.trace", _method("trace"), ("float32",), _trace),
    OpInfo("dist", _call("dist"), F, _dist),
    OpInfo("renorm", _call("renorm"), F, _renorm),
    OpInfo("Tensor.renorm_", lambda lib, a, *r: a.clone().renorm_(*r), F, _renorm),
    OpInfo("quantile", _call("quantile"), F, _quantile, meta=False, check_strides=False),
    OpInfo("quantile_tensor_q", _call("quantile"), F, _quantile_tensor_q, meta=False, check_strides=False),
    OpInfo("nanquantile", _call("nanquantile"), F, _nanquantile, meta=False, check_strides=False),
    OpInfo("cummax", _call("cummax"), FI, _cum),
    OpInfo("cummin", _call("cummin"), FI, _cum),
    OpInfo("Tensor.cummax", _method("cummax"), ("float32",), _cum),
    OpInfo("logcumsumexp", _call("logcumsumexp"), F, _logcumsumexp),
    # PyTorch's own forward-mode tangent loses digits on a wide spread of values: forward only.
    OpInfo("logcumsumexp large", _call("logcumsumexp"), F, _logcumsumexp_large, transforms=False),
    # Not differentiable (nor in PyTorch): the edges come from the values' range.
    OpInfo("histogram", _call("histogram"), F, _histogram, meta=False, check_strides=False, transforms=False),
    OpInfo("histogram_auto_range", _call("histogram"), F, _histogram_auto_range, meta=False, transforms=False),
    OpInfo("histogramdd", _call("histogramdd"), F, _histogramdd, meta=False, check_strides=False, transforms=False),
    OpInfo("histogramdd_auto_range", _call("histogramdd"), F, _histogramdd_auto_range, meta=False, transforms=False),
    OpInfo("float_power", _call("float_power"), ("float32", "float64", "int64"), _float_power),
    OpInfo("ldexp", _call("ldexp"), F, _ldexp),
    OpInfo("sgn", _call("sgn"), FI, _unary, transforms=False),  # sign's entry covers its transforms
    OpInfo("isreal", _call("isreal"), FI, _unary),
    OpInfo("frexp", _call("frexp"), F, _frexp_random),
    OpInfo("frexp special values", _call("frexp"), F, _frexp, transforms=False),  # jumps: no finite differences
    OpInfo("gcd", _call("gcd"), ("int32", "int64"), _binary, meta=False),
    OpInfo("lcm", _call("lcm"), ("int64",), lambda d, r: _binary(d, r, -30, 30), meta=False),
    OpInfo("nextafter", _call("nextafter"), F, _nextafter, transforms=False),  # not differentiable
    OpInfo("diag_embed", _call("diag_embed"), FI, _diag_embed),
    OpInfo("diagflat", _call("diagflat"), FI, _diagflat),
    OpInfo("tensordot", _call("tensordot"), F, _tensordot),
    OpInfo("inner", _call("inner"), FI, _inner),
    OpInfo("narrow_copy", _call("narrow_copy"), FI, _narrow_copy),
    OpInfo("ravel", _call("ravel"), FI, _narrow_copy and _unary),
    OpInfo("repeat_interleave", _call("repeat_interleave"), FI, _repeat_interleave),
    OpInfo("repeat_interleave_tensor", _call("repeat_interleave"), F, _repeat_interleave_tensor, meta=False),
    OpInfo("isin", _call("isin"), ("float32", "int64"), _isin),
    OpInfo("unravel_index", _call("unravel_index"), ("int64",), _unravel, meta=False),
    OpInfo("combinations", _call("combinations"), FI, _combinations),
    OpInfo("index_reduce", _call("index_reduce"), F, _index_reduce),
    OpInfo("broadcast_tensors", lambda lib, ts: lib.broadcast_tensors(*ts), FI, _broadcast_tensors),
    OpInfo("split_with_sizes", _call("split_with_sizes"), FI, _split_with_sizes),
]
