"""Samples for the rearranging family (``ember.core.aten.shape.rearranging``): flip, fliplr, flipud, roll,
repeat, tile, tril and triu (with their in-place and ``out=`` forms)."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, layouts_of, make

SHAPES = ((3, 4), (2, 3, 4), (5,), (), (0, 3), (3, 1), (1, 3))


def spread(shape: tuple, dtype: str, rng, cases: list) -> list[tuple]:
    """(tensor, case) pairs: every case on a contiguous tensor, two on each non-contiguous layout."""
    first, *others = layouts_of(shape, dtype, rng)
    pairs = [(first, case) for case in cases]
    for i, a in enumerate(others):
        pairs += [(a, cases[(2 * i + 1) % len(cases)]), (a, cases[(2 * i + 2) % len(cases)])]
    return pairs


def _flip_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in SHAPES:
        n = len(shape)
        dim_lists = [[], [0], [-1], list(range(n)), [n - 1, 0], [-n]] if n else [[], [0], [-1]]
        for a, dims in spread(shape, dtype, rng, dim_lists):
            out.append(Sample((a, dims), name=f"{a} dims={dims}"))
    x = make((2, 3, 4), dtype, rng)
    out.append(Sample((x, (2, 0)), name="tuple dims"))
    out.append(Sample((x, [0, 0]), name="repeated dim"))
    out.append(Sample((x, [0, -3]), name="repeated dim, negative"))
    out.append(Sample((x, [3]), name="dim out of range"))
    out.append(Sample((make((), dtype, rng), [1]), name="0-dim, dim out of range"))
    return out


def _flip_errors() -> list[ErrorSample]:
    x = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample((x, [1, -1])), RuntimeError, "appears multiple times"),
        ErrorSample(Sample((x, [2])), IndexError, "Dimension out of range"),
    ]


def _flip_method(lib, t, dims):
    return t.flip(*dims) if isinstance(dims, list) else t.flip(dims)


def _unary_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in SHAPES:
        for a in layouts_of(shape, dtype, rng):
            out.append(Sample((a,), name=str(a)))
    return out


def _roll_samples(dtype: str, rng) -> list[Sample]:
    out = []
    cases = {
        2: [
            (1, None),
            (-2, None),
            (13, None),
            (3, 0),
            (-1, 1),
            (5, -1),
            ((1, 2), (0, 1)),
            ((-1, 7), (1, 0)),
            ((1, 1), (0, 0)),
            ((2, -9), (-1, -2)),
            (0, 1),
            ((1,), (0,)),
        ],
        3: [(4, None), ((1, -1, 2), (0, 1, 2)), (-7, 2), ((5, 1), (-3, 1))],
        1: [(2, None), (-6, 0), (11, -1)],
        0: [(1, None), (-3, None)],
    }
    for shape in SHAPES:
        for a, (shifts, dims) in spread(shape, dtype, rng, cases[len(shape)]):
            out.append(Sample((a, shifts) if dims is None else (a, shifts, dims), name=f"{a} {shifts} {dims}"))
    x = make((3, 4), dtype, rng)
    out.append(Sample((make((0, 3), dtype, rng), 1, 2), name="empty: dim never checked"))
    out.append(Sample((x, (1, 2)), name="two shifts, no dims"))
    out.append(Sample((x, (1, 2), 0), name="two shifts, one dim"))
    out.append(Sample((x, 1, 2), name="dim out of range"))
    out.append(Sample((make((), dtype, rng), 1, 0), name="0-dim with a dim"))
    out.append(Sample((x, ()), name="no shifts"))
    return out


def _roll_errors() -> list[ErrorSample]:
    x = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample((x, ())), RuntimeError, "`shifts` required"),
        ErrorSample(Sample((x, (1, 2))), RuntimeError, "shifts and dimensions must align"),
        ErrorSample(Sample((x, 1, 2)), IndexError, "Dimension out of range"),
        ErrorSample(Sample((T(np.ones((), np.float32)), 1, 0)), IndexError, "no dimensions"),
    ]


def _roll(lib, t, shifts, dims=None):
    return lib.roll(t, shifts) if dims is None else lib.roll(t, shifts, dims)


def _roll_method(lib, t, shifts, dims=None):
    return t.roll(shifts) if dims is None else t.roll(shifts, dims)


def _repeat_samples(dtype: str, rng) -> list[Sample]:
    out = []
    cases = {
        2: [(2, 3), (1, 1), (2, 1, 3), (0, 2), (2, 2, 1, 1), (1, 0, 1)],
        3: [(1, 2, 1), (2, 1, 1, 2)],
        1: [(3,), (2, 2), (1,)],
        0: [(), (3,), (2, 2)],
    }
    for shape in SHAPES:
        for a, reps in spread(shape, dtype, rng, cases[len(shape)]):
            out.append(Sample((a, reps), name=f"{a} {reps}"))
    x = make((3, 4), dtype, rng)
    out.append(Sample((x, (2,)), name="fewer repeats than dims"))
    out.append(Sample((x, (2, -1)), name="negative repeat"))
    return out


def _repeat_errors() -> list[ErrorSample]:
    x = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample((x, (2,))), RuntimeError, "can not be smaller"),
        ErrorSample(Sample((x, (2, -1))), RuntimeError, "negative dimension"),
    ]


def _repeat_star(lib, t, reps):
    return t.repeat(*reps) if reps else t.repeat(())


def _repeat_tuple(lib, t, reps):
    return t.repeat(reps)


def _tile_samples(dtype: str, rng) -> list[Sample]:
    out = []
    cases = {
        2: [(2,), (), (2, 3), (1, 2, 3, 1), (0,)],
        3: [(2,), (1, 2, 1, 2)],
        1: [(3,), (2, 2)],
        0: [(), (3,), (2, 2)],
    }
    for shape in SHAPES:
        for a, reps in spread(shape, dtype, rng, cases[len(shape)]):
            out.append(Sample((a, reps), name=f"{a} {reps}"))
    out.append(Sample((make((3, 4), dtype, rng), (-1,)), name="negative"))
    return out


def _tile(lib, t, reps):
    return lib.tile(t, reps)


def _tile_method(lib, t, reps):
    return t.tile(*reps) if reps else t.tile(())


TRIANGLE_SHAPES = ((3, 4), (4, 3), (2, 3, 4), (2, 2, 3, 2), (2, 0, 3), (0, 0), (3, 0), (1, 5))


def _triangle_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in TRIANGLE_SHAPES:
        # Every diagonal on one layout, two on each of the others (non-contiguous inputs).
        first, *others = layouts_of(shape, dtype, rng)
        for diagonal in (None, 2, -1, 10, -10):
            out.append(Sample((first,) if diagonal is None else (first, diagonal), name=f"{first} diagonal={diagonal}"))
        for i, a in enumerate(others):
            for diagonal in ((0, -1), (1, -2), (2, -1))[i]:
                out.append(Sample((a, diagonal), name=f"{a} diagonal={diagonal}"))
    out.append(Sample((make((4,), dtype, rng),), name="1-D"))
    out.append(Sample((make((), dtype, rng), 1), name="0-dim"))
    return out


def _triangle_errors(name: str):
    def errors() -> list[ErrorSample]:
        return [
            ErrorSample(Sample((T(np.ones((3,), np.float32)),)), RuntimeError, "at least 2 dimensions"),
            ErrorSample(Sample((T(np.ones((), np.float32)),)), RuntimeError, "at least 2 dimensions"),
            ErrorSample(Sample((T(np.ones((2, 2), np.float32)), 1.5)), TypeError, "diagonal"),
        ]

    return errors


def _triangle(name: str) -> OpInfo:
    def call(lib, t, *args, out=None):
        fn = getattr(lib, name)
        return fn(t, *args) if out is None else fn(t, *args, out=out)

    def inplace(lib, t, *args):
        return getattr(t, name + "_")(*args)

    return OpInfo(name, call, ALL, _triangle_samples, errors=_triangle_errors(name), inplace=inplace, out=True)


def _method(name: str):
    def call(lib, t, *args):
        return getattr(t, name)(*args)

    return call


def _function(name: str):
    def call(lib, *args):
        return getattr(lib, name)(*args)

    return call


OPS = [
    OpInfo("flip", _function("flip"), ALL, _flip_samples, errors=_flip_errors),
    OpInfo("Tensor.flip", _flip_method, ("float32", "bool"), _flip_samples),
    OpInfo("fliplr", _function("fliplr"), ALL, _unary_samples),
    OpInfo("flipud", _function("flipud"), ALL, _unary_samples),
    OpInfo("Tensor.fliplr", _method("fliplr"), ("float32",), _unary_samples),
    OpInfo("roll", _roll, ALL, _roll_samples, errors=_roll_errors),
    OpInfo("Tensor.roll", _roll_method, ("float32", "int64"), _roll_samples),
    OpInfo("Tensor.repeat(*sizes)", _repeat_star, ALL, _repeat_samples, errors=_repeat_errors),
    OpInfo("Tensor.repeat(sizes)", _repeat_tuple, ("float32", "bool"), _repeat_samples),
    OpInfo("tile", _tile, ALL, _tile_samples),
    OpInfo("Tensor.tile", _tile_method, ("float32", "complex64"), _tile_samples),
    _triangle("tril"),
    _triangle("triu"),
    OpInfo("Tensor.tril", _method("tril"), ("float32", "bool"), _triangle_samples),
    OpInfo("Tensor.triu", _method("triu"), ("float32", "int8"), _triangle_samples),
]
