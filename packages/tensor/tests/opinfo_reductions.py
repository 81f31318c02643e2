"""Samples for the reduction, scan, moment and norm families (``ember.core.aten.reductions.reductions``,
``scans``, ``statistics``, ``norms``).

Every op runs over 0-dim, 1-d, 2-d, 3-d and empty shapes in each layout (contiguous, transposed,
sliced, expanded), with several ``dim``/``keepdim`` combinations, and with values that tie (small
integers) and, for floats, NaNs and infinities.
"""

from __future__ import annotations

import math

import numpy as np
from opinfo import ALL, ALL_REAL, FLOATS, INTS, ErrorSample, OpInfo, Sample, T, layouts_of, make

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0, 3), (3, 0, 2)]
COMPLEX_AND_FLOATS = (*FLOATS, "complex64")


def dim_options(ndim: int, multi: bool = True, none: bool = True) -> list[dict]:
    """The dim/keepdim combinations tried on an input of ``ndim`` dimensions."""
    options = [{"dim": 0}, {"dim": -1, "keepdim": True}]
    if ndim >= 2:
        options.append({"dim": 1})
        if multi:
            options += [{"dim": (0, -1)}, {"dim": [1, 0], "keepdim": True}]
    if ndim >= 3 and multi:
        options.append({"dim": (2,), "keepdim": True})
    if none:
        options += [{"dim": None, "keepdim": True}, {"dim": ()}, {}]
    return options


def _special(dtype: str, rng, infinities: bool = True) -> list[T]:
    """Inputs with NaN, inf and repeated maxima, for floating dtypes.

    Complex infinities are left out: products of them differ between NumPy and PyTorch in the sign of
    a zero or a NaN imaginary part, which C99's Annex G leaves open."""
    if dtype not in FLOATS and dtype != "complex64":
        return []
    np_dtype = make((1,), dtype, rng).array.dtype
    inf = np.inf if infinities and dtype != "complex64" else 7.0
    base = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 4.0, -inf, 2.0], [inf, 0.0, -0.0, 5.0]])
    ties = np.array([[2.0, 7.0, 7.0, 1.0], [3.0, 3.0, 3.0, 3.0]])
    return [T(base.astype(np_dtype)), T(base.astype(np_dtype), "transposed"), T(ties.astype(np_dtype))]


def reduction_samples(options=dim_options, shapes=SHAPES, extra=lambda dtype, rng: [], low=-9, high=9, infinities=True):
    def samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
        out = []
        for shape in shapes:
            for t in layouts_of(shape, dtype, rng, low=low, high=high):
                for kwargs in options(len(shape)):
                    out.append(Sample((t,), dict(kwargs), name=f"{t} {kwargs}"))
        for t in _special(dtype, rng, infinities):
            for kwargs in options(2):
                out.append(Sample((t,), dict(kwargs), name=f"special {t} {kwargs}"))
        return out + extra(dtype, rng)

    return samples


def _dtype_samples(targets):
    def extra(dtype, rng):
        t = make((3, 4), dtype, rng)
        return [Sample((t,), {"dim": 1, "dtype": d}, name=f"{t} dtype={d}") for d in targets(dtype)]

    return extra


def _sum_targets(dtype):
    return [d for d in ("float64", "int32", "float16", "int8") if not (dtype == "complex64" and d != "float64")]


def _mean_targets(dtype):
    return ["float64", "complex64"] if dtype != "complex64" else ["complex64"]


def method_or_function(name: str, lib_attr: str | None = None):
    def call(lib, *args, **kwargs):
        return getattr(lib, lib_attr or name)(*args, **kwargs)

    return call


def _torch_dtypes(kwargs, lib):
    if "dtype" in kwargs and isinstance(kwargs["dtype"], str):
        kwargs = {**kwargs, "dtype": getattr(lib, kwargs["dtype"])}
    return kwargs


def with_dtype(name: str):
    """``lib.<name>(input, **kwargs)`` where a ``dtype`` given by name becomes the library's dtype."""

    def call(lib, *args, **kwargs):
        return getattr(lib, name)(*args, **_torch_dtypes(kwargs, lib))

    return call


# -- errors -----------------------------------------------------------------------------------------

F = T(np.arange(6, dtype=np.float32).reshape(2, 3))
EMPTY = T(np.zeros((0, 3), np.float32))
INT = T(np.arange(6, dtype=np.int64).reshape(2, 3))


def _dim_errors():
    return [
        ErrorSample(Sample((F,), {"dim": (0, 0)}), RuntimeError, "appears multiple times"),
        ErrorSample(Sample((F,), {"dim": (0, -2)}), RuntimeError, "appears multiple times"),
        ErrorSample(Sample((F,), {"dim": 2}), IndexError, "Dimension out of range"),
        ErrorSample(Sample((F,), {"dim": -3}), IndexError, "Dimension out of range"),
        ErrorSample(Sample((T(np.array(2.0, np.float32)),), {"dim": 1}), IndexError, "Dimension out of range"),
        ErrorSample(Sample((F,), {"dim": 1.5}), TypeError),
    ]


def _extrema_errors(name):
    def errors():
        return [
            *_dim_errors(),
            ErrorSample(Sample((EMPTY,), {}), RuntimeError, "numel\\(\\) == 0"),
            ErrorSample(Sample((EMPTY,), {"dim": 0}), IndexError, "non-zero size"),
            # An empty dim is reported before a repeated one.
            ErrorSample(Sample((EMPTY,), {"dim": (1, 0, -2)}), IndexError, "non-zero size"),
            ErrorSample(Sample((T(np.ones(2, np.complex64)),), {}), NotImplementedError, "not implemented"),
        ]

    return errors


def _mean_errors():
    return [
        *_dim_errors(),
        ErrorSample(Sample((INT,), {}), RuntimeError, "floating point or complex"),
        ErrorSample(Sample((INT,), {"dim": 0, "dtype": "int64"}), RuntimeError, "floating point or complex"),
    ]


def _arg_errors():
    return [
        ErrorSample(Sample((EMPTY,), {}), IndexError, "numel\\(\\) == 0"),
        ErrorSample(Sample((EMPTY,), {"dim": 0}), IndexError, "non-zero size"),
        ErrorSample(Sample((F,), {"dim": 2}), IndexError, "Dimension out of range"),
        ErrorSample(Sample((F,), {"dim": (0, 1)}), TypeError),
        ErrorSample(Sample((T(np.ones(2, np.bool_)),), {}), RuntimeError, "bool"),
        ErrorSample(Sample((T(np.ones(2, np.complex64)),), {}), RuntimeError, "complex"),
    ]


def _var_errors():
    return [
        *_dim_errors(),
        ErrorSample(Sample((INT,), {}), RuntimeError, "floating point and complex"),
        ErrorSample(Sample((F, 0), {"unbiased": True, "correction": 1}), TypeError),
    ]


def _norm_errors():
    return [
        ErrorSample(Sample((INT,), {}), RuntimeError, "floating point or complex"),
        ErrorSample(Sample((EMPTY, math.inf), {}), RuntimeError, "identity"),
        ErrorSample(Sample((EMPTY, -1), {"dim": 0}), RuntimeError, "identity"),
        ErrorSample(Sample((F,), {"dtype": "int64"}), RuntimeError, "floating point or complex"),
        ErrorSample(Sample((F,), {"dtype": "float16"}), RuntimeError, "narrowing"),
        ErrorSample(Sample((F,), {"dtype": "complex64"}), RuntimeError, "real"),
        ErrorSample(Sample((F, "fro"), {}), TypeError),
        ErrorSample(Sample((F, 2, (0, 0)), {}), RuntimeError, "appears multiple times"),
    ]


def _cum_errors():
    return [
        ErrorSample(Sample((F, 2)), IndexError, "Dimension out of range"),
        ErrorSample(Sample((F, None)), TypeError),
        ErrorSample(Sample((T(np.ones(2, np.bool_)), 0), {"dtype": "bool"}), NotImplementedError, "Bool"),
    ]


def _logsumexp_errors():
    return [
        ErrorSample(Sample((F, (0, 0))), RuntimeError, "appears multiple times"),
        ErrorSample(Sample((F, 2)), IndexError, "Dimension out of range"),
        ErrorSample(Sample((F, ())), RuntimeError),
    ]


# -- special sample sets ------------------------------------------------------------------------------


def _int_dim_options(ndim):
    return [{"dim": 0}, {"dim": -1, "keepdim": True}, {}] + ([{"dim": 1, "keepdim": False}] if ndim >= 2 else [])


def _all_any_options(ndim):
    return [*dim_options(ndim, multi=False), {"dim": (0, -1)}, {"dim": []}]


def _count_options(ndim):
    return [{"dim": 0}, {"dim": -1}, {}, {"dim": ()}] + ([{"dim": (0, 1)}] if ndim >= 2 else [])


def _overflow(dtype, rng):
    if dtype not in INTS:
        return []
    big = T(np.full((4, 3), 100 if dtype != "uint8" else 200, dtype=make((1,), dtype, rng).array.dtype))
    return [Sample((big,), {"dim": 0}, name="wraps"), Sample((big,), {"dim": 0, "dtype": "int8"}, name="wraps in int8")]


def _var_options(ndim):
    out = [{}, {"dim": 0}, {"dim": -1, "keepdim": True, "correction": 0}, {"correction": 2.5}]
    if ndim >= 2:
        out += [{"dim": (0, 1), "unbiased": False}, {"dim": 1, "correction": 5}]
    return out


def _norm_samples(dtype, rng):
    out = []
    for shape in SHAPES:
        # Every order on the 2-d and empty shapes; the commonest ones on the others.
        ords = (2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5) if shape in ((3, 4), (0, 3), ()) else (2, math.inf)
        for t in layouts_of(shape, dtype, rng):
            for ord in ords:
                for dims in ({}, {"dim": -1, "keepdim": True}, {"dim": (0, -1)} if len(shape) >= 2 else {"dim": 0}):
                    out.append(Sample((t, ord), dict(dims), name=f"{t} ord={ord} {dims}"))
    for t in _special(dtype, rng):
        for ord in (2, math.inf, 0, -1):
            out.append(Sample((t, ord), {"dim": 1}, name=f"special {t} ord={ord}"))
    if dtype in ("float32", "float16"):
        out.append(Sample((make((3, 4), dtype, rng),), {"dtype": "float64"}, name="dtype=float64"))
    if dtype == "float32":
        huge = T(np.array([1e30, 1e30, 1e-30], np.float32))
        out += [
            Sample((huge,), name="overflows in float32"),
            Sample((T(np.array([1e-30, 1e-30], np.float32)),), name="underflow"),
        ]
    return out


def _torch_norm_samples(dtype, rng):
    t = make((3, 4), dtype, rng)
    cube = make((2, 3, 4), dtype, rng, layout="transposed")
    return [
        Sample((t,), name="fro"),
        Sample((t, "fro", 1, True), name="fro dim=1"),
        Sample((cube,), {"p": "fro"}, name="fro 3-d"),
        Sample((cube,), {"p": 3, "dim": (0, 2)}, name="p=3"),
        Sample((t,), {"p": None, "dim": 0}, name="p=None"),
        Sample((t, math.inf), name="inf"),
        Sample((cube, "fro", (0, 1, 2)), name="fro 3 dims: matrix norm error"),
        Sample((t, "abc"), name="unknown order"),
        Sample((t, "nuc"), name="nuclear"),
        Sample((cube, "nuc", (2, 0), True), name="nuclear dims=(2, 0) keepdim"),
        Sample((make((2, 0, 3), dtype, rng), "nuc", (1, 2)), name="nuclear of empty matrices"),
        Sample((t, "nuc", (0, 0)), name="nuclear, repeated dim"),
    ]


def _max_binary_samples(dtype, rng):
    a = make((3, 4), dtype, rng)
    return [
        Sample((a, make((4,), dtype, rng)), name="broadcast"),
        Sample((a, make((), "float64", rng)), name="0-dim other"),
        Sample((make((3, 4), dtype, rng, layout="transposed"), make((3, 4), "int64", rng)), name="promotes"),
    ]


def _cum_samples(dtype, rng):
    out = []
    for shape in SHAPES:
        for t in layouts_of(shape, dtype, rng, low=-3, high=4):
            for dim in sorted({0, -1, len(shape) - 1 if shape else 0}):
                out.append(Sample((t, dim), name=f"{t} dim={dim}"))
    t = make((3, 4), dtype, rng, low=-3, high=4)
    for d in ("float64", "int64", "int8") if dtype != "complex64" else ("complex64",):
        out.append(Sample((t, 1), {"dtype": d}, name=f"{t} dtype={d}"))
    for t in _special(dtype, rng):
        out.append(Sample((t, 1), name=f"special {t}"))
    if dtype in INTS:
        big = T(np.full((6,), 100, dtype=t.array.dtype))
        out += [Sample((big, 0), name="no wrap"), Sample((big, 0), {"dtype": "int8"}, name="wraps in int8")]
    return out


def _inplace_cum(name):
    def call(lib, self, *args, **kwargs):
        return getattr(self, name + "_")(*args, **_torch_dtypes(kwargs, lib))

    return call


def _moments_call(name):
    def call(lib, *args, **kwargs):
        return getattr(lib, name)(*args, **kwargs)

    return call


OPS = [
    OpInfo(
        "sum",
        with_dtype("sum"),
        ALL,
        reduction_samples(extra=lambda d, rng: _dtype_samples(_sum_targets)(d, rng) + _overflow(d, rng)),
        errors=_dim_errors,
        out=True,
    ),
    OpInfo(
        "sum_method",
        lambda lib, x, **k: x.sum(**_torch_dtypes(k, lib)),
        ("float32", "int8", "bool"),
        reduction_samples(),
    ),
    OpInfo(
        "mean",
        with_dtype("mean"),
        ALL,
        reduction_samples(extra=_dtype_samples(_mean_targets)),
        errors=_mean_errors,
        out=True,
    ),
    OpInfo("nansum", with_dtype("nansum"), ALL, reduction_samples(extra=_dtype_samples(_sum_targets)), out=True),
    OpInfo("nanmean", with_dtype("nanmean"), ALL, reduction_samples(extra=_dtype_samples(_mean_targets)), out=True),
    OpInfo(
        "prod",
        with_dtype("prod"),
        ALL,
        reduction_samples(_int_dim_options, low=-3, high=4, extra=_dtype_samples(_sum_targets)),
        out=True,
        # We multiply half types in float32 and round once; PyTorch's vectorized CPU kernel rounds its
        # partial products to the half type, a few ulps away.
        tolerances={"float16": (4e-3, 1e-3), "bfloat16": (3e-2, 1e-2)},
    ),
    OpInfo("amax", with_dtype("amax"), ALL, reduction_samples(), errors=_extrema_errors("amax"), out=True),
    OpInfo("amin", with_dtype("amin"), ALL, reduction_samples(), errors=_extrema_errors("amin"), out=True),
    OpInfo("max_all", lambda lib, x, **k: lib.max(x, **k), ALL, reduction_samples(lambda n: [{}]), out=True),
    OpInfo("min_all", lambda lib, x, **k: lib.min(x, **k), ALL, reduction_samples(lambda n: [{}]), out=True),
    OpInfo(
        "max_dim",
        lambda lib, x, **k: lib.max(x, **k),
        ALL,
        reduction_samples(lambda n: [{"dim": 0}, {"dim": -1, "keepdim": True}] + ([{"dim": 1}] if n >= 2 else [])),
        errors=lambda: _arg_errors()[1:4],
    ),
    OpInfo(
        "min_dim_method",
        lambda lib, x, **k: x.min(**k),
        ("float32", "bfloat16", "int64", "bool"),
        reduction_samples(lambda n: [{"dim": 0, "keepdim": True}, {"dim": -1}]),
    ),
    OpInfo(
        "aminmax",
        lambda lib, x, **k: lib.aminmax(x, **k),
        ALL,
        reduction_samples(lambda n: [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"keepdim": True}]),
    ),
    OpInfo("max_binary", lambda lib, a, b, **k: lib.max(a, b, **k), ALL_REAL, _max_binary_samples, out=True),
    OpInfo("min_binary", lambda lib, a, b: a.min(b), ALL_REAL, _max_binary_samples),
    OpInfo(
        "argmax",
        with_dtype("argmax"),
        ALL,
        reduction_samples(lambda n: [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": None, "keepdim": True}]),
        errors=_arg_errors,
        out=True,
    ),
    OpInfo(
        "argmin",
        with_dtype("argmin"),
        ALL,
        reduction_samples(lambda n: [{}, {"dim": 0}, {"dim": -1, "keepdim": True}]),
        out=True,
    ),
    OpInfo("all", with_dtype("all"), ALL, reduction_samples(_all_any_options), errors=_dim_errors, out=True),
    OpInfo("any", with_dtype("any"), ALL, reduction_samples(_all_any_options), out=True),
    OpInfo("any_method", lambda lib, x, **k: x.any(**k), ("uint8", "float32"), reduction_samples(_all_any_options)),
    OpInfo("count_nonzero", with_dtype("count_nonzero"), ALL, reduction_samples(_count_options)),
    OpInfo(
        "logsumexp",
        lambda lib, x, dim=0, **k: lib.logsumexp(x, dim, **k),
        ALL,
        reduction_samples(
            lambda n: (
                [{"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": ()}, {"dim": (), "keepdim": True}]
                + ([{"dim": (0, 1)}] if n >= 2 else [])
            )
        ),
        errors=_logsumexp_errors,
        out=True,
    ),
    OpInfo("var", _moments_call("var"), ALL, reduction_samples(_var_options), errors=_var_errors, out=True),
    OpInfo("std", _moments_call("std"), ALL, reduction_samples(_var_options), out=True),
    # No infinities: PyTorch's Welford mean of [inf, x] is nan or inf depending on the order.
    OpInfo(
        "var_mean", _moments_call("var_mean"), COMPLEX_AND_FLOATS, reduction_samples(_var_options, infinities=False)
    ),
    OpInfo(
        "std_mean", _moments_call("std_mean"), COMPLEX_AND_FLOATS, reduction_samples(_var_options, infinities=False)
    ),
    OpInfo(
        "var_legacy",
        lambda lib, x, *a, **k: x.var(*a, **k),
        ("float32",),
        lambda dtype, rng: [
            Sample((make((3, 4), dtype, rng), False), name="unbiased positional"),
            Sample((make((3, 4), dtype, rng), 1, False, True), name="dim, unbiased, keepdim"),
            Sample((make((3, 4), dtype, rng), (0, 1), True), name="dims, unbiased"),
        ],
    ),
    OpInfo(
        "vector_norm",
        lambda lib, x, *a, **k: lib.linalg.vector_norm(x, *a, **_torch_dtypes(k, lib)),
        ALL,
        _norm_samples,
        errors=_norm_errors,
        out=True,
    ),
    OpInfo("norm", lambda lib, x, *a, **k: lib.norm(x, *a, **k), (*COMPLEX_AND_FLOATS, "int64"), _torch_norm_samples),
    OpInfo(
        "cumsum",
        lambda lib, *a, **k: lib.cumsum(*a, **_torch_dtypes(k, lib)),
        ALL,
        _cum_samples,
        errors=_cum_errors,
        inplace=_inplace_cum("cumsum"),
        out=True,
    ),
    OpInfo(
        "cumprod",
        lambda lib, *a, **k: lib.cumprod(*a, **_torch_dtypes(k, lib)),
        ALL,
        _cum_samples,
        inplace=_inplace_cum("cumprod"),
        out=True,
    ),
]
