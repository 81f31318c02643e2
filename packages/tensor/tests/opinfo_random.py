"""Samples for the random ops (``ember.core.aten.random_*``, ``dropout``) against PyTorch.

Our numbers come from Philox, PyTorch's CPU ones from a Mersenne Twister, so the values differ: each
call here returns ``zeros_like`` of the result (and whether an in-place op returned its input), which
compares dtype, shape and strides, and the error samples compare the errors. Where the result does
not depend on the draws (``dropout`` with ``p`` 0 or 1 or not training, ``bernoulli`` with
probabilities 0 and 1, ``randint`` over a single value) the values are compared too. The
distributions themselves are tested statistically in ``test_random.py``.
"""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, INTS, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make

SIZES = [(), (3,), (2, 3), (0, 4), (2, 1, 3)]
FLOATS_AND_COMPLEX = (*FLOATS, "complex64")
NUMERIC = (*FLOATS, *INTS)


def shape_of(lib, result):
    """What we compare of a random result: its metadata, through a tensor of zeros laid out like it."""
    if isinstance(result, tuple | list):
        return tuple(shape_of(lib, r) for r in result)
    return lib.zeros_like(result)


def _lib_kwargs(lib, kwargs: dict) -> dict:
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("dtype"), str):
        kwargs["dtype"] = getattr(lib, kwargs["dtype"])
    if kwargs.pop("_generator", False):
        kwargs["generator"] = lib.Generator().manual_seed(7)
    if "_out" in kwargs:  # an empty ``out=`` tensor of that dtype, which the op resizes
        kwargs["out"] = lib.empty(0, dtype=getattr(lib, kwargs.pop("_out")))
    return kwargs


def factory(name: str):
    def call(lib, *args, **kwargs):
        return shape_of(lib, getattr(lib, name)(*args, **_lib_kwargs(lib, kwargs)))

    return call


def size_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for size in SIZES:
        out.append(Sample(size, {"dtype": dtype}, f"{size} {dtype}"))
        out.append(Sample((size,), {"dtype": dtype, "_generator": True}, f"[{size}] generator"))
    return out


def like_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in [(), (4,), (3, 4), (2, 3, 4), (0, 3)]:
        for t in layouts_of(shape, dtype, rng):
            out.append(Sample((t,), {}, f"{t}"))
            out.append(Sample((t,), {"dtype": "float64"}, f"{t} float64"))
    return out


def randint_samples(dtype: str, rng) -> list[Sample]:
    high = 2 if dtype == "bool" else 100
    out = [Sample((high, size), {"dtype": dtype}) for size in SIZES]
    out.append(Sample((0 if dtype in ("uint8", "bool") else -5, high, (4, 2)), {"dtype": dtype, "_generator": True}))
    if dtype == "int64":
        out.append(Sample((-(2**63), 2**63 - 1, (5,)), {}, "int64 extremes"))
        out.append(Sample((0, 2**40, (5,)), {}, "64-bit range"))
        out.append(Sample((10, (3,)), {}, "default dtype"))
    return out


def _randint_one(lib, *args, **kwargs):
    """``randint`` over one value: the draws are all that value."""
    return lib.randint(*args, **_lib_kwargs(lib, kwargs))


def randint_like_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in [(), (4,), (3, 4), (0, 3)]:
        for t in layouts_of(shape, dtype, rng):
            out.append(Sample((t, 2)))
            out.append(Sample((t, 0, 2)))
    return out


def randperm_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((n,), {"dtype": dtype}) for n in (0, 1, 5, 100)] + [Sample((7,), {"_generator": True})]


def _randperm_values(lib, n, **kwargs):
    """A permutation, sorted, is ``arange(n)`` in both libraries."""
    return lib.sort(lib.randperm(n, **_lib_kwargs(lib, kwargs))).values


def tensor_samples(dtype: str, rng, low=0, high=1) -> list[Sample]:
    out = []
    for shape in [(), (4,), (3, 4), (2, 3, 4), (0, 3)]:
        for t in layouts_of(shape, dtype, rng, low=low, high=high):
            out.append(Sample((t,), {}, f"{t}"))
    return out


def _bernoulli_certain(dtype: str, rng) -> list[Sample]:
    p = np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]).astype(make((1,), dtype, rng).array.dtype)
    return [Sample((T(p),)), Sample((T(p, "transposed"),))]


def inplace(name: str, *args):
    """``x.<name>(*args)``, or with the sample's own arguments where it has some (error samples)."""

    def call(lib, x, *extra, **kwargs):
        result = getattr(x, name)(*(extra or args), **_lib_kwargs(lib, kwargs))
        return result is x, lib.zeros_like(x)

    return call


def normal_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in [(), (4,), (3, 4), (0, 3)]:
        for t in layouts_of(shape, dtype, rng, low=0, high=2):
            out.append(Sample((t, 2.0), {}, f"Tensor_float {t}"))
            out.append(Sample((1.5, t), {}, f"float_Tensor {t}"))
            out.append(Sample((t, t), {}, f"Tensor_Tensor {t}"))
    a, b = make((2, 3), dtype, rng, low=0, high=2), make((3,), dtype, rng, low=0, high=2)
    out.append(Sample((a, b), {}, "broadcast"))
    out.append(Sample((b, a), {}, "broadcast the other way"))
    out.append(Sample((0.0, 1.0, (2, 3)), {"dtype": dtype}, "float_float"))
    out.append(Sample((0.0, 1.0, (4,)), {"dtype": dtype, "_generator": True}, "float_float generator"))
    return out


def multinomial_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in [(5,), (3, 6), (6, 3)]:
        for t in layouts_of(shape, dtype, rng, low=0.1, high=2):
            n = t.array.shape[-1]
            for k, replacement in ((1, False), (n, False), (2, True), (3 * n, True)):
                out.append(Sample((t, k, replacement), {}, f"{t} {k} {replacement}"))
    return out


def dropout_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in [(), (4,), (3, 4), (2, 3, 4), (0, 3)]:
        for t in layouts_of(shape, dtype, rng):
            for p, train in ((0.5, True), (0.2, True)):
                out.append(Sample((t, p, train), {}, f"{t} {p} {train}"))
    return out


def dropout_fixed_samples(dtype: str, rng) -> list[Sample]:
    out = []
    special = np.array([[1.0, np.inf, -2.0], [np.nan, 0.0, 3.0]])
    for shape in [(), (4,), (3, 4), (0, 3)]:
        for t in layouts_of(shape, dtype, rng):
            for p, train in ((0.0, True), (0.5, False), (1.0, True), (1.0, False)):
                out.append(Sample((t, p, train), {}, f"{t} {p} {train}"))
    t = T(special.astype(make((1,), dtype, rng).array.dtype))
    out += [Sample((t, p, train)) for p, train in ((1.0, True), (0.0, True), (0.5, False))]
    return out


def _native_dropout_fixed(lib, x, p, train):
    output, mask = lib.native_dropout(x, p, train)
    return output, mask


def _dropout_identity(lib, x, p, train):
    """``dropout`` hands back its input itself where it changes nothing."""
    return lib.dropout(x, p, train) is x


# -- errors ---------------------------------------------------------------------------------------------

F32 = T(np.array([0.2, 0.5, 0.9], np.float32))
P_BAD = T(np.array([0.2, 1.5], np.float32))


def _rand_errors():
    return [
        ErrorSample(Sample((2, 3), {"dtype": "int64"}), NotImplementedError, "Long"),
        ErrorSample(Sample((2,), {"dtype": "bool"}), NotImplementedError, "Bool"),
        ErrorSample(Sample((2, -1)), RuntimeError, "negative dimension"),
        ErrorSample(Sample((2, 1.5)), TypeError),
    ]


def _randn_errors():
    return [
        ErrorSample(Sample((2, 3), {"dtype": "int64"}), NotImplementedError, "Long"),
        ErrorSample(Sample((2, -1)), RuntimeError, "negative dimension"),
    ]


def _randint_errors():
    return [
        ErrorSample(Sample((3, 3, (2,))), RuntimeError, "from=3 >= to=3"),
        ErrorSample(Sample((5, 1, (2,))), RuntimeError, "less than 'to'"),
        ErrorSample(
            Sample((0, 300, (2,)), {"dtype": "uint8"}), RuntimeError, "to - 1 is out of bounds for unsigned char"
        ),
        ErrorSample(Sample((-1, 3, (2,)), {"dtype": "uint8"}), RuntimeError, "from is out of bounds"),
        ErrorSample(Sample((5, (2,)), {"dtype": "bool"}), RuntimeError, "out of bounds for bool"),
        ErrorSample(Sample((0, 2**63, (2,))), ValueError, "Overflow"),
        ErrorSample(Sample((0, 1.5, (2,))), TypeError),
        ErrorSample(Sample((5, (-1,))), RuntimeError, "negative dimension"),
    ]


def _randperm_errors():
    return [
        ErrorSample(Sample((3,), {"dtype": "bool"}), NotImplementedError, "Bool"),
        ErrorSample(Sample((3000,), {"dtype": "float16"}), RuntimeError, "2049"),
        ErrorSample(Sample((300,), {"dtype": "uint8"}), RuntimeError, "overflow"),
        ErrorSample(Sample((-1,)), RuntimeError),
        ErrorSample(Sample((2.5,)), TypeError),
    ]


def _bernoulli_errors():
    return [
        ErrorSample(Sample((P_BAD,)), RuntimeError, "p_in >= 0 && p_in <= 1"),
        ErrorSample(Sample((T(np.array([1, 0], np.int64)),)), NotImplementedError, "Long"),
        ErrorSample(Sample((T(np.array([True])),)), NotImplementedError, "Bool"),
        ErrorSample(Sample((F32, 1.5)), RuntimeError, "expects p to be in"),
        ErrorSample(Sample((F32, -0.5)), RuntimeError, "expects p to be in"),
    ]


def _normal_errors():
    return [
        ErrorSample(Sample((F32, -1.0)), RuntimeError, "std >= 0.0"),
        ErrorSample(Sample((0.0, T(np.array([-1.0, 1.0], np.float32)))), RuntimeError, "all elements of std"),
        ErrorSample(Sample((T(np.zeros(2, np.int64)), 1.0)), NotImplementedError, "Long"),
        ErrorSample(Sample((T(np.zeros((2, 3), np.float32)), T(np.ones(4, np.float32)))), RuntimeError, "must match"),
        ErrorSample(Sample((0.0, -1.0, (2,))), RuntimeError, "std >= 0.0"),
    ]


def _multinomial_errors():
    def probs(*values):
        return T(np.array(values, np.float32))

    return [
        ErrorSample(Sample((probs(1.0, 2.0), 3)), RuntimeError, "without replacement"),
        ErrorSample(Sample((probs(1.0, 2.0), 0)), RuntimeError, "n_sample <= 0"),
        ErrorSample(Sample((probs(1.0, -2.0), 1)), RuntimeError, "element < 0"),
        ErrorSample(Sample((probs(1.0, -2.0), 2, True)), RuntimeError, "entry < 0"),
        ErrorSample(Sample((probs(0.0, 0.0), 2, True)), RuntimeError, "sum of probabilities"),
        ErrorSample(Sample((probs(0.0, 0.0), 1)), RuntimeError, "sum of probabilities"),
        ErrorSample(Sample((probs(1.0, np.nan), 2, True)), RuntimeError, "infinity or NaN"),
        ErrorSample(Sample((probs(1.0, np.inf), 1)), RuntimeError, "inf"),
        ErrorSample(Sample((T(np.array([1, 2], np.int64)), 1)), RuntimeError, "floating-point"),
        ErrorSample(Sample((T(np.array(1.0, np.float32)), 1)), RuntimeError, "1 or 2 dim"),
        ErrorSample(Sample((T(np.ones((2, 2, 2), np.float32)), 1)), RuntimeError, "1 or 2 dim"),
    ]


def _dropout_errors():
    return [
        ErrorSample(Sample((F32, 1.5, True)), RuntimeError, "between 0 and 1"),
        ErrorSample(Sample((F32, -0.1, True)), RuntimeError, "between 0 and 1"),
        ErrorSample(Sample((T(np.ones(3, np.int64)), 0.5, True)), RuntimeError, "can't be cast"),
    ]


def _native_dropout_errors():
    # native_dropout checks p only through its bernoulli_(1 - p).
    return [
        ErrorSample(Sample((F32, 1.5, True)), RuntimeError, "expects p to be in"),
        ErrorSample(Sample((T(np.ones(3, np.int64)), 0.5, True)), RuntimeError, "can't be cast"),
    ]


def _f_dropout_errors():
    return [
        ErrorSample(Sample((F32,), {"p": 1.5}), ValueError, "between 0 and 1"),
        ErrorSample(Sample((T(np.ones(3, np.int64)),), {"p": 0.5}), RuntimeError, "can't be cast"),
    ]


def _f_dropout(lib, x, **kwargs):
    return shape_of(lib, functional(lib).dropout(x, **kwargs))


def f_dropout_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for t in layouts_of((3, 4), dtype, rng):
        out += [Sample((t,), {}), Sample((t,), {"p": 0.3, "training": True}), Sample((t,), {"training": False})]
    return out


def overload(name: str):
    """``lib.ops.aten.<name>`` called by its overload name in both libraries: the overloads that the
    public functions do not route to (``ember.rand`` always calls ``rand.generator``, whose kernel
    the plain ``rand.default`` shares)."""
    op, _, which = name.partition(".")

    def call(lib, *args, **kwargs):
        return shape_of(lib, getattr(getattr(lib.ops.aten, op), which)(*args, **_lib_kwargs(lib, kwargs)))

    return call


def _overload_samples(*args, **kwargs):
    """One sample per size (the size is the last positional argument) with the given arguments."""

    def samples(dtype: str, rng) -> list[Sample]:
        return [Sample((*args, list(size)), dict(kwargs)) for size in ((), (3,), (2, 3), (0, 4))]

    return samples


def _tensor_overload_samples(*args, low=0, high=1, **kwargs):
    """The tensor first, then ``args``, for each shape in one layout each."""

    def samples(dtype: str, rng) -> list[Sample]:
        return [
            Sample((make(shape, dtype, rng, low=low, high=high), *args), dict(kwargs))
            for shape in ((), (4,), (3, 4), (0, 3))
        ]

    return samples


_GEN = {"_generator": True}
OVERLOADS = [
    OpInfo("aten.rand.default", overload("rand.default"), FLOATS, _overload_samples(dtype="float32"), meta=False),
    OpInfo("aten.rand.out", overload("rand.out"), FLOATS, _overload_samples(_out="float32"), meta=False),
    OpInfo(
        "aten.rand.generator_out",
        overload("rand.generator_out"),
        FLOATS,
        _overload_samples(_out="float64", **_GEN),
        meta=False,
    ),
    OpInfo("aten.randn.default", overload("randn.default"), FLOATS, _overload_samples(dtype="float64"), meta=False),
    OpInfo("aten.randn.out", overload("randn.out"), FLOATS, _overload_samples(_out="float32"), meta=False),
    OpInfo(
        "aten.randn.generator_out",
        overload("randn.generator_out"),
        FLOATS,
        _overload_samples(_out="float32", **_GEN),
        meta=False,
    ),
    OpInfo("aten.randint.default", overload("randint.default"), ("int64",), _overload_samples(5), meta=False),
    OpInfo(
        "aten.randint.generator", overload("randint.generator"), ("int64",), _overload_samples(5, **_GEN), meta=False
    ),
    OpInfo(
        "aten.randint.low", overload("randint.low"), ("int64",), _overload_samples(-3, 5, dtype="int32"), meta=False
    ),
    OpInfo("aten.randint.out", overload("randint.out"), ("int64",), _overload_samples(5, _out="int64"), meta=False),
    OpInfo(
        "aten.randint.generator_out",
        overload("randint.generator_out"),
        ("int64",),
        _overload_samples(5, _out="float32", **_GEN),
        meta=False,
    ),
    OpInfo(
        "aten.randint.low_out",
        overload("randint.low_out"),
        ("int64",),
        _overload_samples(-3, 5, _out="int16"),
        meta=False,
    ),
    OpInfo(
        "aten.randint.low_generator_out",
        overload("randint.low_generator_out"),
        ("int64",),
        _overload_samples(-3, 5, _out="int64", **_GEN),
        meta=False,
    ),
    OpInfo("aten.rand_like.default", overload("rand_like.default"), FLOATS, _tensor_overload_samples()),
    OpInfo("aten.randn_like.default", overload("randn_like.default"), FLOATS, _tensor_overload_samples()),
    OpInfo("aten.randint_like.default", overload("randint_like.default"), NUMERIC, _tensor_overload_samples(4)),
    OpInfo(
        "aten.randint_like.generator",
        overload("randint_like.generator"),
        NUMERIC,
        _tensor_overload_samples(4, **_GEN),
    ),
    OpInfo(
        "aten.randint_like.low_dtype",
        overload("randint_like.low_dtype"),
        NUMERIC,
        _tensor_overload_samples(1, 4, dtype="int64"),
    ),
    OpInfo(
        "aten.randperm.default",
        overload("randperm.default"),
        ("int64",),
        lambda dtype, rng: [Sample((n,), {"dtype": "int32"}) for n in (0, 1, 5)],
        meta=False,
    ),
    OpInfo(
        "aten.randperm.out",
        overload("randperm.out"),
        ("int64",),
        lambda dtype, rng: [Sample((n,), {"_out": "int64"}) for n in (0, 1, 5)],
        meta=False,
    ),
    OpInfo(
        "aten.randperm.generator_out",
        overload("randperm.generator_out"),
        ("int64",),
        lambda dtype, rng: [Sample((n,), {"_out": "float32", **_GEN}) for n in (0, 1, 5)],
        meta=False,
    ),
    OpInfo(
        "aten.bernoulli.out", overload("bernoulli.out"), FLOATS, _tensor_overload_samples(_out="float32"), meta=False
    ),
    OpInfo(
        "aten.multinomial.out",
        overload("multinomial.out"),
        ("float32", "float64"),
        lambda dtype, rng: [
            Sample((make(shape, dtype, rng, low=0.1, high=2), 2, True), {"_out": "int64"}) for shape in ((5,), (3, 6))
        ],
        meta=False,
    ),
    OpInfo(
        "aten.normal.Tensor_Tensor_out",
        overload("normal.Tensor_Tensor_out"),
        ("float32", "float64"),
        lambda dtype, rng: [Sample((make((3, 4), dtype, rng), make((4,), dtype, rng, low=0, high=2)), {"_out": dtype})],
        meta=False,
    ),
    OpInfo(
        # ``out`` has the result's shape: PyTorch 2.13 raises on an empty one here (a size mismatch,
        # where its other ``normal`` out forms resize), and Ember resizes it.
        "aten.normal.Tensor_float_out",
        lambda lib, mean, std: shape_of(lib, lib.ops.aten.normal.Tensor_float_out(mean, std, out=lib.empty_like(mean))),
        ("float32", "float64"),
        lambda dtype, rng: [Sample((make((3, 4), dtype, rng), 2.0))],
        meta=False,
    ),
    OpInfo(
        "aten.normal.float_Tensor_out",
        overload("normal.float_Tensor_out"),
        ("float32", "float64"),
        lambda dtype, rng: [Sample((1.5, make((3, 4), dtype, rng, low=0, high=2)), {"_out": dtype})],
        meta=False,
    ),
    OpInfo(
        "aten.normal.float_float_out",
        overload("normal.float_float_out"),
        ("float32",),
        _overload_samples(0.5, 2.0, _out="float64"),
        meta=False,
    ),
    OpInfo(
        "dropout_",
        lambda lib, x, *args: shape_of(lib, lib.dropout_(x, *args)),
        FLOATS,
        lambda dtype, rng: [
            Sample((t, p, train))
            for t in layouts_of((3, 4), dtype, rng)[:3]
            for p, train in ((0.4, True), (0.4, False))
        ],
    ),
]


OPS = [
    OpInfo("rand", factory("rand"), FLOATS_AND_COMPLEX, size_samples, errors=_rand_errors, meta=False),
    OpInfo("randn", factory("randn"), FLOATS_AND_COMPLEX, size_samples, errors=_randn_errors, meta=False),
    OpInfo("rand_like", factory("rand_like"), FLOATS_AND_COMPLEX, like_samples),
    OpInfo("randn_like", factory("randn_like"), FLOATS, like_samples),
    OpInfo("randint", factory("randint"), (*NUMERIC, "bool"), randint_samples, errors=_randint_errors, meta=False),
    OpInfo(
        "randint_one_value",
        _randint_one,
        ("int64",),
        lambda d, r: [Sample((4, 5, (3, 2))), Sample((-(2**63), -(2**63) + 1, (2,)))],
        meta=False,
    ),
    OpInfo("randint_like", factory("randint_like"), NUMERIC, randint_like_samples),
    OpInfo(
        "randperm", factory("randperm"), ("int64", "int32", "int16", "float32", "float64"), randperm_samples, meta=False
    ),
    OpInfo(
        "randperm_values",
        _randperm_values,
        ("int64", "float32", "uint8"),
        randperm_samples,
        errors=_randperm_errors,
        meta=False,
    ),
    OpInfo("bernoulli", factory("bernoulli"), FLOATS, tensor_samples),
    OpInfo("bernoulli_p", lambda lib, x: shape_of(lib, lib.bernoulli(x, 0.3)), NUMERIC, tensor_samples),
    OpInfo(
        "bernoulli_certain",
        lambda lib, p, *a: lib.bernoulli(p, *a),
        FLOATS,
        _bernoulli_certain,
        errors=_bernoulli_errors,
    ),
    OpInfo("bernoulli_", inplace("bernoulli_", 0.4), (*NUMERIC, "bool"), tensor_samples),
    OpInfo(
        "bernoulli_tensor_",
        lambda lib, x: inplace("bernoulli_")(lib, x, lib.full_like(x, 0.5, dtype=lib.float32)),
        (*NUMERIC, "bool"),
        tensor_samples,
    ),
    OpInfo(
        "uniform_",
        inplace("uniform_", -2.0, 3.0),
        FLOATS_AND_COMPLEX,
        tensor_samples,
        errors=lambda: [
            ErrorSample(Sample((F32, 2.0, 1.0)), RuntimeError, "from=2"),
            ErrorSample(Sample((T(np.zeros(2, np.int64)),)), NotImplementedError, "Long"),
        ],
    ),
    OpInfo(
        "normal_",
        inplace("normal_", 1.0, 2.0),
        FLOATS_AND_COMPLEX,
        tensor_samples,
        errors=lambda: [
            ErrorSample(Sample((F32, 0.0, -1.0)), RuntimeError, "std >= 0.0"),
            ErrorSample(Sample((T(np.zeros(2, np.int64)),)), NotImplementedError, "Long"),
        ],
    ),
    OpInfo(
        "exponential_",
        inplace("exponential_", 2.0),
        FLOATS,
        tensor_samples,
        errors=lambda: [
            ErrorSample(Sample((F32, 0.0)), RuntimeError, "lambda > 0.0"),
            ErrorSample(Sample((F32, -1.0)), RuntimeError, "lambda > 0.0"),
            ErrorSample(Sample((T(np.zeros(2, np.int64)),)), RuntimeError, "continuous"),
        ],
    ),
    OpInfo("random_", inplace("random_"), (*NUMERIC, "bool"), tensor_samples),
    OpInfo("random_to", inplace("random_", 2), (*NUMERIC, "bool"), tensor_samples),
    OpInfo(
        "random_from_to",
        inplace("random_", 1, 3),
        NUMERIC,
        tensor_samples,
        errors=lambda: [
            ErrorSample(Sample((T(np.zeros(2, np.uint8)), -1, 5)), RuntimeError, "from is out of bounds"),
            ErrorSample(Sample((F32, 3, 3)), RuntimeError, "less than 'to'"),
        ],
    ),
    OpInfo("normal", factory("normal"), FLOATS, normal_samples, errors=_normal_errors, meta=False),
    OpInfo("multinomial", factory("multinomial"), FLOATS, multinomial_samples, errors=_multinomial_errors),
    OpInfo("dropout", factory("dropout"), FLOATS, dropout_samples, errors=_dropout_errors),
    OpInfo("native_dropout", factory("native_dropout"), FLOATS, dropout_samples, errors=_native_dropout_errors),
    OpInfo("dropout_fixed", lambda lib, x, p, t: lib.dropout(x, p, t), FLOATS, dropout_fixed_samples),
    OpInfo("dropout_identity", _dropout_identity, ("float32",), dropout_fixed_samples),
    OpInfo("native_dropout_fixed", _native_dropout_fixed, FLOATS, dropout_fixed_samples),
    OpInfo("F.dropout", _f_dropout, FLOATS, f_dropout_samples, errors=_f_dropout_errors),
    *OVERLOADS,
]

# The functional forms of the in-place fills (defined with the views' copies' samples).
from opinfo_view_copies import RANDOM_VARIANTS  # noqa: E402

OPS += RANDOM_VARIANTS
