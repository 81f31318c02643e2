"""Samples for the factories (``ember.core.aten.factories.factories``). They take no tensor, so each
sample names its arguments directly; the ``*_like`` forms take a tensor in each layout, and their
strides (PyTorch's ``preserve_format``) are compared. ``empty`` results are compared by shape,
dtype and strides only."""

from __future__ import annotations

from opinfo import ErrorSample, OpInfo, Sample, layouts_of

ONE = ("float32",)  # the dtype a factory sample asks for is part of its arguments


def _fixed(samples):
    return lambda dtype, rng: [Sample(args, kwargs, name=f"{args} {kwargs}") for args, kwargs in samples]


def _dtype_arg(lib, kwargs):
    if "dtype" in kwargs and isinstance(kwargs["dtype"], str):
        kwargs = {**kwargs, "dtype": getattr(lib, kwargs["dtype"])}
    return kwargs


def factory(name, samples, errors=(), **kw):
    def call(lib, *args, **kwargs):
        return getattr(lib, name)(*args, **_dtype_arg(lib, kwargs))

    # No tensor argument to move to the meta device: test_devices checks device="meta" instead.
    return OpInfo(name, call, ONE, _fixed(samples), errors=lambda: list(errors), meta=False, **kw)


def _empty_call(name):
    def call(lib, *args, **kwargs):
        t = getattr(lib, name)(*args, **_dtype_arg(lib, kwargs))
        return t.zero_()  # the contents are unspecified; shape, dtype and strides are compared

    return call


def _err(args, kwargs, error, match=None):
    return ErrorSample(Sample(args, kwargs), error, match)


SIZES = [((2, 3), {}), ((0,), {}), (((),), {}), ((4,), {"dtype": "int32"}), (([2, 2],), {"dtype": "bool"})]


def like(name, extra=()):
    def samples(dtype, rng):
        out = []
        for shape in [(2, 3), (3, 1, 4), (5,), ()]:
            for spec in layouts_of(shape, dtype, rng):
                out.append(Sample((spec, *extra), name=f"{spec}"))
                out.append(Sample((spec, *extra), {"dtype": "int16"}, name=f"{spec} int16"))
        return out

    def call(lib, t, *args, **kwargs):
        result = getattr(lib, name)(t, *args, **_dtype_arg(lib, kwargs))
        return result.zero_() if name == "empty_like" else result

    return OpInfo(name, call, ("float32", "int64", "bool"), samples)


OPS = [
    OpInfo("empty", _empty_call("empty"), ONE, _fixed(SIZES), meta=False),
    OpInfo(
        "empty_strided",
        _empty_call("empty_strided"),
        ONE,
        _fixed([(((2, 3), (1, 2)), {}), (((2, 3), (4, 1)), {}), (((2, 2), (0, 1)), {}), (((0, 3), (1, 1)), {})]),
        errors=lambda: [
            _err(((2, 3), (1,)), {}, RuntimeError, "mismatch in length"),
            _err(((2, 2), (-1, 1)), {}, RuntimeError, "negative strides"),
        ],
        meta=False,
    ),
    factory("zeros", SIZES, errors=[_err((-1, 2), {}, RuntimeError, "negative dimension")]),
    factory("ones", SIZES + [((3,), {"dtype": "complex64"})]),
    factory(
        "full",
        [
            (((2, 3), 1.5), {}),
            (((2,), 7), {}),
            (((2,), True), {}),
            (((2,), 1 + 2j), {}),
            (((2,), 7), {"dtype": "float16"}),
            (((), -3), {}),
            (((2,), 2.5), {"dtype": "int32"}),
            (((2,), 300), {"dtype": "uint8"}),
        ],
    ),
    factory(
        "arange",
        [
            ((5,), {}),
            ((1, 10, 3), {}),
            ((10, 1, -3), {}),
            ((0.0, 1.0, 0.1), {}),
            ((1, 2.5, 0.5), {}),
            ((-1.5, 2), {}),
            ((5,), {"dtype": "float64"}),
            ((0, 1, 0.25), {"dtype": "int64"}),
            ((0,), {}),
            ((3, 3), {}),
            ((0, 10, 3), {"dtype": "float16"}),
            ((1e-3, 2e-3, 1e-4), {"dtype": "float64"}),
            ((10, 0, -0.75), {}),
            ((0.5, 5.7, 1.5), {"dtype": "int64"}),
            ((-2.5, 3, 1.5), {"dtype": "int32"}),
            ((0, 1, 0.25), {"dtype": "int64"}),
            ((-2.5, 3, 1.5), {"dtype": "int64"}),
            ((0.5, 5.7, 1.5), {"dtype": "int16"}),
            ((0, 1, 0.25), {"dtype": "int32"}),
            ((-2.5, 3, 1.5), {"dtype": "uint8"}),
            ((0, 5.5, 2), {"dtype": "int64"}),
        ],
        errors=[
            _err((0, 10, 0), {}, RuntimeError, "step must be nonzero"),
            _err((0, 10, -1), {}, RuntimeError, "inconsistent with step sign"),
            _err((10, 0, 1), {}, RuntimeError, "inconsistent with step sign"),
            _err((0, float("inf")), {}, RuntimeError, "unsupported range"),
            _err((0, float("nan")), {}, RuntimeError, "unsupported range"),
            _err((3,), {"dtype": "bool"}, NotImplementedError, "not implemented for 'Bool'"),
        ],
    ),
    factory(
        "linspace",
        [
            ((0, 1, 5), {}),
            ((-3.5, 2.25, 7), {}),
            ((10, 0, 4), {}),
            ((0, 1, 0), {}),
            ((2, 9, 1), {}),
            ((0, 10, 4), {"dtype": "int64"}),
            ((0, 10, 7), {"dtype": "int32"}),
            ((10, -3, 5), {"dtype": "int64"}),
            ((0.5, 9.5, 6), {"dtype": "int64"}),
            ((0, 1, 11), {"dtype": "float64"}),
            ((0, 1, 9), {"dtype": "float16"}),
            ((0, 1, 9), {"dtype": "bfloat16"}),
            ((0, 1, 3), {"dtype": "complex64"}),
            ((1, 2, 1), {"dtype": "int32"}),
            ((0, 1 + 1j, 3), {}),
            ((-5, 5, 4), {"dtype": "int16"}),
            ((0, 255, 4), {"dtype": "uint8"}),
        ],
        errors=[
            _err((0, 1, -1), {}, RuntimeError, "non-negative"),
            _err((0, 1, 3), {"dtype": "bool"}, NotImplementedError, "not implemented for 'Bool'"),
        ],
        tolerances={"float32": (1e-6, 1e-6)},
    ),
    factory(
        "eye",
        [((3,), {}), ((2, 4), {}), ((4, 2), {}), ((0,), {}), ((3,), {"dtype": "int64"}), ((3, 3), {"dtype": "bool"})],
        errors=[_err((-1,), {}, RuntimeError, "greater or equal to 0")],
    ),
    like("empty_like"),
    like("zeros_like"),
    like("ones_like"),
    like("full_like", extra=(3,)),
]


def _new(name):
    def call(lib, t, *args, **kwargs):
        result = getattr(t, name)(*args, **_dtype_arg(lib, kwargs))
        return result.zero_() if name in ("new_empty", "new_empty_strided") else result

    return call


def _new_samples(cases):
    def samples(dtype, rng):
        return [
            Sample((spec, *args), kwargs, name=f"{spec} {args} {kwargs}")
            for spec in layouts_of((2, 3), dtype, rng)[:2]
            for args, kwargs in cases
        ]

    return samples


NEW_DTYPES = ("float32", "int16", "bool")
OPS += [
    OpInfo("new_empty", _new("new_empty"), NEW_DTYPES, _new_samples([((2, 4), {}), (((3,),), {"dtype": "float64"})])),
    OpInfo("new_zeros", _new("new_zeros"), NEW_DTYPES, _new_samples([((2, 4), {}), (((3,),), {"dtype": "int64"})])),
    OpInfo("new_ones", _new("new_ones"), NEW_DTYPES, _new_samples([((4,), {}), (((),), {"dtype": "complex64"})])),
    OpInfo("new_full", _new("new_full"), NEW_DTYPES, _new_samples([(((2, 2), 3), {}), (((2,), 1.5), {})])),
    OpInfo("new_empty_strided", _new("new_empty_strided"), NEW_DTYPES, _new_samples([(((2, 3), (1, 2)), {})])),
    OpInfo(
        "new_tensor",
        _new("new_tensor"),
        NEW_DTYPES,
        _new_samples([(([1, 2],), {}), (([1.5, 2.5],), {}), (([[True]],), {"dtype": "float16"})]),
    ),
]
