"""Samples for the view family (``ember.core.aten.shape.views``): every layout of each input, so that
strides, offsets and the view-or-copy choice of ``reshape`` are compared with PyTorch's.

``test_tensor.py`` runs the same table again to check storage offsets and that each result is a
view: writing through it changes the base and bumps the version counter.
"""

from __future__ import annotations

import numpy as np
from opinfo import ErrorSample, OpInfo, Sample, T, layouts_of

DTYPES = ("float32", "int64", "bool", "complex64")


def _samples(cases):
    """``cases``: (shape, args, kwargs) triples; each shape in each layout that applies to it."""

    def samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
        out = []
        for shape, args, kwargs in cases:
            for spec in layouts_of(shape, dtype, rng):
                out.append(Sample((spec, *args), kwargs, name=f"{spec} {args} {kwargs or ''}"))
        return out

    return samples


def _error(shape, args, error, match, kwargs=None):
    return ErrorSample(Sample((T(np.zeros(shape, np.float32)), *args), kwargs or {}), error, match)


def view_op(name, call, cases, errors=()):
    return OpInfo(name, call, DTYPES, _samples(cases), errors=lambda: list(errors))


def method(name):
    return lambda lib, t, *args, **kwargs: getattr(t, name)(*args, **kwargs)


def function(name):
    return lambda lib, t, *args, **kwargs: getattr(lib, name)(t, *args, **kwargs)


RESHAPES = [
    ((2, 3, 4), ((6, 4),), {}),
    ((2, 3, 4), ((-1,),), {}),
    ((2, 3, 4), ((4, -1, 2),), {}),
    ((2, 3, 4), ((2, 1, 3, 1, 4),), {}),
    ((2, 3, 4), ((3, 8),), {}),
    ((3, 4), ((12,),), {}),
    ((3, 4), ((4, 3),), {}),
    ((1, 4), ((4, 1),), {}),
    ((4, 1), ((2, 2),), {}),
    ((), ((1, 1),), {}),
    ((), ((-1,),), {}),
    ((1,), ((),), {}),
    ((0, 3), ((3, 0),), {}),
    ((0, 3), ((-1, 3),), {}),
    ((2, 3, 4), ((5, -1),), {}),
    ((2, 3, 4), ((-1, -1),), {}),
]

OPS = [
    view_op(
        "view",
        lambda lib, t, shape: t.view(*shape),
        RESHAPES,
        [
            _error((3, 4), ((5, -1),), RuntimeError, "invalid for input of size 12"),
            _error((3, 4), ((-1, -1),), RuntimeError, "only one dimension can be inferred"),
            _error((3, 4), ((-2, 6),), RuntimeError, "invalid shape dimension -2"),
        ],
    ),
    OpInfo(
        "view_dtype",
        lambda lib, t, name: t.view(getattr(lib, name)),
        ("float32", "int16", "uint8", "complex64"),
        _samples(
            [
                ((3, 4), (name,), {})
                for name in ("float32", "int32", "float16", "int8", "uint8", "float64", "complex64", "bool", "bfloat16")
            ]
            + [((), ("int32",), {}), ((), ("float16",), {}), ((2, 6), ("float64",), {}), ((4, 2), ("int16",), {})]
        ),
    ),
    view_op("view_tuple", lambda lib, t, shape: t.view(shape), RESHAPES[:4]),
    view_op("view_as", lambda lib, t, shape: t.view_as(lib.empty(shape)), [((2, 3, 4), ((6, 4),), {})]),
    view_op("reshape", lambda lib, t, shape: t.reshape(*shape), RESHAPES),
    view_op("reshape_function", lambda lib, t, shape: lib.reshape(t, shape), RESHAPES[:6]),
    view_op(
        "permute",
        method("permute"),
        [
            ((2, 3, 4), (2, 0, 1), {}),
            ((2, 3, 4), (-1, 0, 1), {}),
            ((2, 3), (1, 0), {}),
            ((), (), {}),
            ((2, 3, 4), (0, 0, 1), {}),
            ((2, 3, 4), (0, 1), {}),
            ((2, 3, 4), (0, 1, 3), {}),
        ],
        [_error((2, 3), (0, 0), RuntimeError, "duplicate dims")],
    ),
    view_op("permute_function", lambda lib, t, dims: lib.permute(t, dims), [((2, 3, 4), ((2, 0, 1),), {})]),
    view_op(
        "transpose",
        method("transpose"),
        [
            ((2, 3, 4), (0, 2), {}),
            ((2, 3, 4), (-1, -2), {}),
            ((2, 3, 4), (1, 1), {}),
            ((3,), (0, -1), {}),
            ((), (0, -1), {}),
            ((2, 3), (0, 2), {}),
        ],
        [_error((2, 3), (0, 2), IndexError, "Dimension out of range")],
    ),
    view_op("t", method("t"), [((), (), {}), ((3,), (), {}), ((2, 3), (), {}), ((2, 3, 4), (), {})]),
    view_op("T", lambda lib, t: t.T, [((), (), {}), ((3,), (), {}), ((2, 3), (), {})]),
    view_op("mT", lambda lib, t: t.mT, [((2, 3), (), {}), ((2, 3, 4), (), {}), ((3,), (), {})]),
    view_op(
        "expand",
        method("expand"),
        [
            ((3, 1), (2, 3, 4), {}),
            ((3, 1), (-1, 4), {}),
            ((3, 1), ((2, 3, 5),), {}),
            ((), (2, 3), {}),
            ((1,), (0,), {}),
            ((3, 2), (3, 4), {}),
            ((3, 1), (4,), {}),
            ((3, 1), (-1, 3, 4), {}),
        ],
        [_error((3, 2), (3, 4), RuntimeError, "must match the existing size")],
    ),
    view_op("expand_as", lambda lib, t, shape: t.expand_as(lib.empty(shape)), [((3, 1), ((2, 3, 4),), {})]),
    view_op(
        "squeeze",
        method("squeeze"),
        [
            ((1, 3, 1, 2), (), {}),
            ((1, 3, 1, 2), (0,), {}),
            ((1, 3, 1, 2), (1,), {}),
            ((1, 3, 1, 2), (-2,), {}),
            ((1, 3, 1, 2), ((0, 2),), {}),
            ((1, 3, 1, 2), ((),), {}),
            ((1, 3, 1, 2), (), {"dim": 2}),
            ((), (), {}),
            ((), (0,), {}),
            ((1,), (), {}),
            ((1, 3), (2,), {}),
        ],
    ),
    view_op("squeeze_function", function("squeeze"), [((1, 3, 1), (), {}), ((1, 3, 1), ((0, 2),), {})]),
    view_op(
        "unsqueeze",
        method("unsqueeze"),
        [
            ((2, 3, 4), (0,), {}),
            ((2, 3, 4), (2,), {}),
            ((2, 3, 4), (3,), {}),
            ((2, 3, 4), (-1,), {}),
            ((2, 3, 4), (-4,), {}),
            ((), (0,), {}),
            ((2, 3, 4), (4,), {}),
            ((1, 3), (1,), {}),
        ],
    ),
    view_op(
        "flatten",
        method("flatten"),
        [
            ((2, 3, 4), (), {}),
            ((2, 3, 4), (1,), {}),
            ((2, 3, 4), (0, 1), {}),
            ((2, 3, 4), (1, 1), {}),
            ((2, 3, 4), (-2, -1), {}),
            ((), (), {}),
            ((2, 3, 4), (2, 1), {}),
        ],
    ),
    view_op("flatten_function", function("flatten"), [((2, 3, 4), (1,), {})]),
    view_op(
        "unflatten",
        method("unflatten"),
        [
            ((6, 4), (0, (2, 3)), {}),
            ((6, 4), (0, (-1, 3)), {}),
            ((6, 4), (-1, (2, 2)), {}),
            ((6, 4), (1, (4,)), {}),
            ((6, 4), (0, (4, 2)), {}),
            ((6, 4), (0, ()), {}),
        ],
    ),
    view_op(
        "narrow",
        method("narrow"),
        [
            ((5, 4), (0, 1, 3), {}),
            ((5, 4), (1, -3, 2), {}),
            ((5, 4), (1, 4, 0), {}),
            ((5, 4), (0, 3, 3), {}),
            ((5, 4), (0, 6, 0), {}),
            ((), (0, 0, 1), {}),
        ],
    ),
    view_op(
        "select",
        method("select"),
        [
            ((5, 4), (0, 1), {}),
            ((5, 4), (1, -1), {}),
            ((2, 3, 4), (-2, 2), {}),
            ((5, 4), (1, 4), {}),
            ((5, 4), (0, -6), {}),
            ((), (0, 0), {}),
        ],
        [_error((5, 4), (1, 4), IndexError, "out of range")],
    ),
    view_op(
        "as_strided",
        method("as_strided"),
        [
            ((3, 4), ((2, 2), (1, 2)), {}),
            ((3, 4), ((2, 2), (1, 2), 1), {}),
            ((3, 4), ((3,), (5,)), {}),
            ((3, 4), ((2, 2), (4, 1), 100), {}),
            ((3, 4), ((2, 3), (3, 1), 6), {}),
            ((3, 4), ((2,), (1, 1)), {}),
        ],
        [_error((3, 4), ((4, 4), (4, 1)), RuntimeError, "out of bounds for storage")],
    ),
    view_op(
        "unfold",
        method("unfold"),
        [
            ((5, 4), (0, 2, 2), {}),
            ((5, 4), (-1, 4, 1), {}),
            ((5, 4), (1, 2, 3), {}),
            ((5, 4), (1, 0, 1), {}),
            ((5, 4), (0, 6, 1), {}),
            ((5, 4), (0, 2, 0), {}),
            ((), (0, 1, 1), {}),
        ],
    ),
    view_op(
        "diagonal",
        method("diagonal"),
        [
            ((3, 4), (), {}),
            ((3, 4), (1,), {}),
            ((3, 4), (-1,), {}),
            ((3, 4), (5,), {}),
            ((3, 4), (-4,), {}),
            ((2, 3, 4), (), {"dim1": 1, "dim2": 2}),
            ((2, 3, 4), (1, -1, 0), {}),
            ((2, 3, 4), (0, 1, 1), {}),
        ],
    ),
    view_op("diagonal_function", function("diagonal"), [((3, 4), (), {"offset": 1})]),
    view_op(
        "movedim",
        method("movedim"),
        [
            ((2, 3, 4), (0, 2), {}),
            ((2, 3, 4), (-1, 0), {}),
            ((2, 3, 4), ((0, 1), (2, 0)), {}),
            ((2, 3, 4, 5), ((1, 3), (0, 1)), {}),
            ((2, 3, 4), ((0, 1), (2,)), {}),
            ((2, 3, 4), ((0, 0), (1, 2)), {}),
        ],
    ),
    view_op("moveaxis", function("moveaxis"), [((2, 3, 4), (0, -1), {})]),
    view_op("swapaxes", method("swapaxes"), [((2, 3, 4), (0, 2), {}), ((2, 3), (-1, 0), {})]),
    view_op("swapdims", function("swapdims"), [((2, 3, 4), (1, 2), {})]),
    view_op(
        "split",
        method("split"),
        [
            ((5, 4), (2,), {}),
            ((5, 4), (5,), {}),
            ((5, 4), (7,), {}),
            ((5, 4), (3, 1), {}),
            ((5, 4), ([1, 4],), {}),
            ((5, 4), ([1, 1, 2],), {"dim": 1}),
            ((5, 4), ([2, 2],), {}),
            ((0, 4), (2,), {}),
        ],
    ),
    view_op("split_function", function("split"), [((5, 4), (2,), {}), ((5, 4), ((3, 2),), {})]),
    view_op(
        "chunk",
        method("chunk"),
        [
            ((5, 4), (2,), {}),
            ((5, 4), (3,), {"dim": 1}),
            ((5, 4), (5,), {}),
            ((5, 4), (6,), {}),
            ((6, 4), (4,), {}),
            ((5, 4), (0,), {}),
            ((0, 4), (3,), {}),
            ((4, 0), (2,), {"dim": 1}),
        ],
    ),
    view_op("unbind", method("unbind"), [((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1,), {}), ((), (), {})]),
    view_op("detach", method("detach"), [((3, 4), (), {}), ((), (), {})]),
]
