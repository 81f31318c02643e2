"""Samples for the unary pointwise family (``ember.core.aten.pointwise.unary``).

Each op runs on every dtype (refusals are checked against PyTorch's errors by ``test_ops``), on
0-dim, empty and non-contiguous tensors, and on the edge values of its domain (nan, +-inf, -0.0,
log(0), sqrt(-1), ties for rounding). gelu, silu and mish are reached as ``torch.nn.functional.<name>``
in PyTorch and as ``ember.ops.aten.<name>.default`` here, their in-place and out forms through the
op overloads of both libraries.
"""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ALL_REAL, FLOATS, NP_DTYPES, ErrorSample, OpInfo, Sample, T, layouts_of, make

SHAPES = [(3, 4), (), (0,), (0, 3), (2, 3, 4)]
# Edge values shared by every float op; each op adds the boundaries of its own domain.
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-3, 60.0, -60.0]
INT_EDGES = {"int8": [-128, 127, 0, -1], "uint8": [0, 255, 1], "int16": [-32768, 32767], "int32": [-(2**31), 7]}


def unary_samples(low=-9, high=9, edges=(), params=({},)):
    def samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
        out = []
        for shape in SHAPES:
            specs = (
                layouts_of(shape, dtype, rng, low=low, high=high)
                if shape == (3, 4)
                else [make(shape, dtype, rng, low=low, high=high)]
            )
            if shape == (2, 3, 4):
                specs.append(make(shape, dtype, rng, low=low, high=high, layout="transposed"))
            for spec in specs:
                out.append(Sample((spec,), dict(params[0]), name=f"{spec}"))
        if dtype in FLOATS:
            with np.errstate(over="ignore"):  # values beyond float16's range are meant to become inf
                values = np.array([*EDGES, *edges], dtype=np.float64).astype(NP_DTYPES[dtype])
            out.append(Sample((T(values),), dict(params[0]), name="edges"))
        elif dtype == "complex64":
            parts = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 60.0]
            values = np.array([complex(re, im) for re in parts for im in parts], np.complex64)
            out.append(Sample((T(values),), dict(params[0]), name="complex edges"))
        elif dtype in INT_EDGES:
            out.append(Sample((T(np.array(INT_EDGES[dtype], NP_DTYPES[dtype])),), dict(params[0]), name="int edges"))
        base = make((5,), dtype, rng, low=low, high=high)
        for extra in params[1:]:
            out.append(Sample((base,), dict(extra), name=f"{base} {extra}"))
        return out

    return samples


def op(name, dtypes=ALL, samples=None, inplace=True, out=True, **kw) -> OpInfo:
    def call(lib, *args, **kwargs):
        return getattr(lib, name)(*args, **kwargs)

    def call_inplace(lib, self, *args, **kwargs):
        return getattr(self, name + "_")(*args, **kwargs)

    return OpInfo(
        name, call, dtypes, samples or unary_samples(), inplace=call_inplace if inplace else None, out=out, **kw
    )


def _gelu_backward_samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
    """Pairs of one shape and layout (PyTorch's float32 kernel refuses broadcasting), and the edges."""
    out = []
    for shape in SHAPES:
        for x in layouts_of(shape, dtype, rng, low=-6, high=6):
            grad = make(shape, dtype, rng)
            for params in ({}, {"approximate": "tanh"}):
                out.append(Sample((grad, x), dict(params), name=f"{grad} . {x} {params}"))
    if dtype in FLOATS:
        edges = np.array(EDGES, dtype=np.float64).astype(NP_DTYPES[dtype])
        out.append(Sample((T(np.ones_like(edges)), T(edges)), name="edges"))
    return out


def _gelu_of_posinf(sample: Sample, expected: np.ndarray) -> np.ndarray:
    """gelu(+inf) is +inf. PyTorch's exact kernel gives nan there on some CPUs and dtypes (float32
    and bfloat16 on AVX-512; float16 too on some machines) and inf on others, so the oracle's value
    there is replaced by the correct one."""
    x = sample.args[0]
    if sample.kwargs.get("approximate", "none") != "none" or not isinstance(x, T):
        return expected
    fixed = np.array(expected, copy=True)
    fixed[np.broadcast_to(np.isposinf(x.array.astype(np.float64)), fixed.shape)] = np.inf
    return fixed


def nn_op(name, samples, **kw) -> OpInfo:
    """An activation: ``torch.nn.functional.<name>`` against ``ember.ops.aten.<name>``."""

    def call(lib, *args, out=None, **kwargs):
        if lib.__name__ == "torch":
            if out is not None:
                return getattr(lib.ops.aten, name).out(*args, out=out, **kwargs)
            return getattr(lib.nn.functional, name)(*args, **kwargs)
        if out is not None:
            return getattr(lib.ops.aten, name).out(*args, out=out, **kwargs)
        return getattr(lib.ops.aten, name).default(*args, **kwargs)

    def call_inplace(lib, self, *args, **kwargs):
        return getattr(lib.ops.aten, name + "_").default(self, *args, **kwargs)

    return OpInfo(name, call, ALL, samples, inplace=call_inplace, out=True, **kw)


def _errors(*cases):
    def errors():
        return [
            ErrorSample(Sample((T(np.array(values, dtype)),), kwargs), error, match)
            for values, dtype, kwargs, error, match in cases
        ]

    return errors


UNIT = unary_samples(low=-1, high=1, edges=(1.0 - 1e-3, -1.0 + 1e-3, 1.25, -1.25))

OPS = [
    op("abs", errors=_errors(([True], np.bool_, {}, NotImplementedError, "abs_cpu"))),
    op(
        "neg",
        errors=_errors(
            ([True], np.bool_, {}, RuntimeError, "Negation"),
            # dtype-keeping ops want out= of the input's dtype exactly; float ops take any castable one.
            ([1.0], np.float32, {"out": T(np.zeros(1, np.float64))}, RuntimeError, "Found dtype Double but expected"),
        ),
    ),
    op("exp", errors=_errors(([1], np.int64, {"out": T(np.zeros(1, np.int64))}, RuntimeError, "can't be cast"))),
    op("exp2"),
    op("expm1"),
    op("log", samples=unary_samples(low=0, high=9, edges=(1e-30, 5e-324, -1e-30))),
    op("log2", samples=unary_samples(low=0, high=9)),
    op("log10", samples=unary_samples(low=0, high=9)),
    op("log1p", samples=unary_samples(low=-1, high=9, edges=(-1.0, -1.5, 1e-10))),
    op("sqrt", samples=unary_samples(low=0, high=9)),
    op("rsqrt", samples=unary_samples(low=0, high=9)),
    op("sin"),
    op("cos"),
    op("tan", samples=unary_samples(low=-1.4, high=1.4)),
    op("asin", samples=UNIT),
    op("acos", samples=UNIT),
    op("atan"),
    op("sinh", samples=unary_samples(low=-5, high=5)),
    op("cosh", samples=unary_samples(low=-5, high=5)),
    op("tanh"),
    op("asinh"),
    op("acosh", samples=unary_samples(low=1, high=9, edges=(1.0 + 1e-3, 0.999, 1e6))),
    op("atanh", samples=UNIT),
    op("deg2rad", dtypes=ALL_REAL),
    op("rad2deg", dtypes=ALL_REAL),
    op("angle", dtypes=ALL_REAL, samples=unary_samples(edges=(-1e-30,)), inplace=False),
    # PyTorch lays a complex tensor's angle out row-major whatever the input's layout.
    OpInfo(
        "angle_complex", lambda lib, *a, **k: lib.angle(*a, **k), ("complex64",), unary_samples(), check_strides=False
    ),
    op("sigmoid"),
    op("relu", out=False, errors=_errors(([True], np.bool_, {}, RuntimeError, "Boolean inputs"))),
    op("erf", samples=unary_samples(low=-4, high=4, edges=(5.0, -5.0, 27.0, 1e-300))),
    op("erfinv", samples=UNIT),
    op("floor"),
    op("ceil"),
    op("round", samples=unary_samples(edges=(0.5000001, -3.5, 4.5, 2.675, 1e20))),
    OpInfo(
        "round_decimals",
        lambda lib, *a, **k: lib.round(*a, **k),
        ALL,
        unary_samples(
            edges=(2.675, 1.005, 12345.6789, -0.125), params=({"decimals": 2}, {"decimals": -1}, {"decimals": 0})
        ),
        inplace=lambda lib, self, *a, **k: self.round_(*a, **k),
        out=True,
    ),
    op("trunc"),
    op("frac", errors=_errors(([1], np.int64, {}, NotImplementedError, "frac_cpu"))),
    op("sign"),
    op("reciprocal"),
    op("square"),
    op("logical_not"),
    op("bitwise_not", errors=_errors(([1.0], np.float32, {}, NotImplementedError, "bitwise_not_cpu"))),
    op("isnan", inplace=False, out=False),
    op("isinf", inplace=False, out=False),
    op("isfinite", inplace=False, out=False),
    *(op(name, inplace=False) for name in ("isposinf", "isneginf")),
    # Not bfloat16: PyTorch's tensors of that dtype are built here through float32, and PyTorch rounds
    # float32's nan to a bfloat16 nan with its sign bit set, so the two libraries' inputs would differ.
    op("signbit", dtypes=tuple(d for d in ALL if d != "bfloat16"), inplace=False),
    op(
        "nan_to_num",
        errors=_errors(([1.0], np.float16, {"out": T(np.zeros(1, np.float32))}, RuntimeError, "should be same as")),
    ),
    OpInfo(
        "nan_to_num_args",
        lambda lib, *a, **k: lib.nan_to_num(*a, **k),
        ALL,
        unary_samples(params=({"nan": 1.5, "posinf": 2.0, "neginf": -3.0}, {"posinf": 1e6}, {"nan": -7.0})),
        inplace=lambda lib, self, *a, **k: self.nan_to_num_(*a, **k),
        out=True,
    ),
    # PyTorch's other spellings.
    *(op(alias, dtypes=("float32", "int64")) for alias in ("absolute", "negative", "fix")),
    *(op(alias, dtypes=("float32", "int64"), samples=UNIT) for alias in ("arcsin", "arccos", "arctan")),
    *(op(alias, dtypes=("float32", "int64"), samples=UNIT) for alias in ("arcsinh", "arctanh")),
    op("arccosh", dtypes=("float32", "int64"), samples=unary_samples(low=1, high=9)),
    nn_op(
        "gelu",
        unary_samples(params=({}, {"approximate": "tanh"}, {"approximate": "none"})),
        errors=_errors(([1.0], np.float32, {"approximate": "sigmoid"}, RuntimeError, "approximate")),
        oracle_fix=_gelu_of_posinf,
    ),
    OpInfo(
        "gelu_backward",
        lambda lib, *args, **kwargs: lib.ops.aten.gelu_backward(*args, **kwargs),
        ALL,
        _gelu_backward_samples,
        errors=lambda: [
            ErrorSample(
                Sample((T(np.ones(2, np.float32)), T(np.ones(2, np.float32))), {"approximate": "sigmoid"}),
                RuntimeError,
                "approximate",
            )
        ],
    ),
    nn_op("silu", unary_samples(low=-20, high=20)),
    nn_op("mish", unary_samples(low=-20, high=20)),
    OpInfo("neg_operator", lambda lib, x: -x, ALL, unary_samples()),
    OpInfo("abs_operator", lambda lib, x: abs(x), ALL, unary_samples()),
    OpInfo("invert_operator", lambda lib, x: ~x, ALL, unary_samples()),
    OpInfo("positive", lambda lib, x: +x, ALL, unary_samples()),
]
