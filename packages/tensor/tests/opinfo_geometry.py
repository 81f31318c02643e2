"""Samples for the ops that set a tensor's geometry (``ember.core.aten.shape.geometry``): ``slice_inverse``,
``resize_``/``resize_as_`` within the storage (on a fresh copy, with memory formats) and the deprecated ``resize``/``resize_as``; the copies ``view_as_real_copy``/``view_as_complex_copy``;
and ``empty_permuted`` (compared by shape, dtype and strides)."""

from __future__ import annotations

import warnings

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, layouts_of, make

DTYPES = ("float32", "float64", "int64", "complex64")


def _slice_inverse(lib, src, dim, start, end, step):
    # self is the slice of src; the inverse reads self's storage laid out as src.
    piece = lib.ops.aten.slice.Tensor(src, dim, start, end, step)
    return lib.slice_inverse(piece, src, dim, start, end, step)


def _slice_inverse_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape, args in (((5, 4), (0, 1, 4, 1)), ((3, 6), (1, 2, None, 2)), ((4, 3), (0, None, None, 1))):
        for spec in layouts_of(shape, dtype, rng):
            out.append(Sample((spec, *args), name=f"{spec} {args}"))
    return out


def _resize(lib, t, size, **kwargs):
    fmt = kwargs.pop("memory_format", None)
    if fmt is not None:
        kwargs["memory_format"] = getattr(lib, fmt)
    return t.clone().resize_(size, **kwargs)


def _resize_samples(dtype: str, rng) -> list[Sample]:
    x = make((4, 6), dtype, rng)
    return [
        Sample((x, (3, 8)), name="same count"),
        Sample((x, (2, 5)), name="shrink"),
        Sample((x, ()), name="to 0-d"),
        Sample((x, (0, 3)), name="to empty"),
        Sample((make((3, 4), dtype, rng, layout="transposed"), (2, 6)), name="from transposed"),
        Sample((x, (1, 2, 3, 4)), {"memory_format": "channels_last"}, "channels_last"),
    ]


def _resize_errors() -> list[ErrorSample]:
    x = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample((x, (2,)), {"memory_format": "preserve_format"}), RuntimeError, "Unsupported memory format"),
        ErrorSample(Sample((x, (2, 3)), {"memory_format": "channels_last"}), RuntimeError, "rank 4"),
    ]


def _resize_as(lib, t, template, **kwargs):
    fmt = kwargs.pop("memory_format", None)
    if fmt is not None:
        kwargs["memory_format"] = getattr(lib, fmt)
    return lib.resize_as_(t.clone(), template, **kwargs)


def _resize_as_samples(dtype: str, rng) -> list[Sample]:
    x = make((3, 8), dtype, rng)
    channels_last = T(np.zeros((1, 2, 2, 3), np.float32), "transposed")
    return [
        Sample((x, make((4, 6), dtype, rng)), name="same count"),
        Sample((x, make((2, 2), "float32", rng)), name="shrink, template of another dtype"),
        Sample((x, make((2, 3), dtype, rng, layout="transposed")), {"memory_format": "preserve_format"}, "preserve"),
        Sample((x, channels_last), {"memory_format": "preserve_format"}, "preserve a 4-d layout"),
    ]


def _deprecated(name: str):
    def call(lib, t, *args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(t, name)(*args)

    return call


def _resize_out_of_place_samples(dtype: str, rng) -> list[Sample]:
    return [
        Sample((make((3, 4), dtype, rng), 2, 6), name="sizes"),
        Sample((make((3, 4), dtype, rng, layout="transposed"), 12), name="transposed"),
    ]


def _resize_out_of_place_errors() -> list[ErrorSample]:
    return [ErrorSample(Sample((T(np.ones((2, 3), np.float32)), 5)), RuntimeError, "preserving the number of elements")]


def _resize_as_out_of_place_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((make((3, 4), dtype, rng), make((6, 2), dtype, rng)), name="template")]


def _complex_copies(name: str):
    return lambda lib, t: getattr(lib, name)(t)


def _view_as_real_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((spec,), name=str(spec)) for spec in layouts_of((3, 4), dtype, rng)]


def _view_as_complex_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((make((3, 2), dtype, rng),)), Sample((make((2, 3, 2), dtype, rng),))]


def _empty_permuted(lib, size, layout, **kwargs):
    if "dtype" in kwargs:
        kwargs["dtype"] = getattr(lib, kwargs["dtype"])
    return lib.empty_permuted(size, layout, **kwargs).zero_()  # contents unspecified: the metadata is compared


def _empty_permuted_samples(dtype: str, rng) -> list[Sample]:
    return [
        Sample(((2, 3, 5), (0, 2, 1))),
        Sample(((2, 3, 5), (2, 0, 1)), {"dtype": "int32"}),
        Sample(((2, 0, 5), (2, 0, 1))),
        Sample(((), ())),
    ]


def _empty_permuted_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample(((2, 3), (0,))), RuntimeError, "does not match the length of the physical_layout"),
        ErrorSample(Sample(((2, 3), (1, 1))), RuntimeError, "Duplicate dim not allowed"),
        ErrorSample(Sample(((2, 3), (0, 2))), RuntimeError, "Dimension out of range"),
    ]


OPS = [
    OpInfo("slice_inverse", _slice_inverse, DTYPES, _slice_inverse_samples),
    OpInfo("resize_", _resize, DTYPES, _resize_samples, _resize_errors, transforms=False),
    OpInfo("resize_as_", _resize_as, DTYPES, _resize_as_samples, transforms=False),
    OpInfo(
        "Tensor.resize",
        _deprecated("resize"),
        DTYPES,
        _resize_out_of_place_samples,
        _resize_out_of_place_errors,
    ),
    OpInfo("Tensor.resize_as", _deprecated("resize_as"), DTYPES, _resize_as_out_of_place_samples),
    OpInfo("view_as_real_copy", _complex_copies("view_as_real_copy"), ("complex64",), _view_as_real_samples),
    OpInfo(
        "view_as_complex_copy",
        _complex_copies("view_as_complex_copy"),
        ("float32", "float64"),
        _view_as_complex_samples,
    ),
    OpInfo(
        "empty_permuted",
        _empty_permuted,
        ("float32",),
        _empty_permuted_samples,
        _empty_permuted_errors,
        meta=False,
        transforms=False,
    ),
]
