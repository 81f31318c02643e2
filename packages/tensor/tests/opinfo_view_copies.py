"""Samples for the views' ``*_copy`` ops, the scatters that invert views, and the functional forms of
the in-place-only ops (``ember.core.aten.shape.view_copies``, ``.functional_variants``), called as
``lib.ops.aten.<op>.<overload>`` in both libraries. Functionalization emits these ops; the random
ones compare their results' metadata, as ``opinfo_random.py`` explains.
"""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, OpInfo, Sample, T, layouts_of, make

DTYPES = ("float32", "int64", "complex64")


def aten(name: str, overload: str):
    return lambda lib, *args, **kwargs: getattr(getattr(lib.ops.aten, name), overload)(*args, **kwargs)


def _cases(cases):
    def samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
        out = []
        for shape, args in cases:
            for spec in layouts_of(shape, dtype, rng):
                out.append(Sample((spec, *args), name=f"{spec} {args}"))
        return out

    return samples


COPIES = {
    ("view_copy", "default"): [((2, 3, 4), ([6, 4],)), ((3, 4), ([-1],)), ((), ([1, 1],))],
    ("as_strided_copy", "default"): [((3, 4), ([2, 2], [1, 2], 1)), ((3, 4), ([3], [4]))],
    ("alias_copy", "default"): [((3, 4), ())],
    ("detach_copy", "default"): [((3, 4), ())],
    ("permute_copy", "default"): [((2, 3, 4), ([2, 0, 1],)), ((3, 4), ([-1, 0],))],
    ("transpose_copy", "int"): [((2, 3, 4), (0, 2)), ((3, 4), (-1, 0))],
    ("t_copy", "default"): [((3, 4), ()), ((3,), ())],
    ("expand_copy", "default"): [((3, 1), ([3, 4],)), ((4,), ([2, 3, 4],)), ((1, 4), ([-1, 4],))],
    ("squeeze_copy", "default"): [((3, 1, 4, 1), ())],
    ("squeeze_copy", "dims"): [((3, 1, 4, 1), ([1, 3],)), ((3, 1, 4), ([0],))],
    ("squeeze_copy", "dim"): [((3, 1, 4), (1,)), ((3, 1, 4), (-3,))],
    ("unsqueeze_copy", "default"): [((3, 4), (1,)), ((3, 4), (-1,))],
    ("select_copy", "int"): [((3, 4), (0, 1)), ((3, 4), (1, -1))],
    ("slice_copy", "Tensor"): [((5, 4), (0, 1, 4, 2)), ((3, 6), (1, None, -1))],
    ("unfold_copy", "default"): [((3, 8), (1, 3, 2))],
    ("diagonal_copy", "default"): [((3, 4), ()), ((2, 3, 4), (1, 1, 2))],
    ("unbind_copy", "int"): [((3, 4), (1,))],
    ("split_copy", "Tensor"): [((5, 4), (2,))],
    ("split_with_sizes_copy", "default"): [((5, 4), ([1, 3], 1))],
}


def _scatter(view_shape_of, cases):
    """``cases``: (shape, view arguments); ``src`` has the view's shape, filled with new values."""

    def samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
        out = []
        for shape, args in cases:
            for spec in layouts_of(shape, dtype, rng):
                src = make(view_shape_of(shape, *args), dtype, rng)
                out.append(Sample((spec, src, *args), name=f"{spec} {args}"))
        return out

    return samples


def _slice_shape(shape, dim, start, end, step):
    shape = list(shape)
    shape[dim] = len(range(shape[dim])[start:end:step])
    return tuple(shape)


def _select_shape(shape, dim, index):
    return tuple(s for i, s in enumerate(shape) if i != dim % len(shape))


def _diagonal_shape(shape, offset=0, dim1=0, dim2=1):
    rest = [s for i, s in enumerate(shape) if i not in (dim1, dim2)]
    n = min(shape[dim1], shape[dim2] - offset) if offset >= 0 else min(shape[dim1] + offset, shape[dim2])
    return (*rest, max(n, 0))


def _view_dtype(lib, t, name):
    return lib.ops.aten.view_copy.dtype(t, getattr(lib, name))


SCATTERS = [
    OpInfo(
        "view_copy_dtype",
        _view_dtype,
        ("float32", "int16"),
        lambda dtype, rng: [
            Sample((spec, name)) for spec in layouts_of((3, 4), dtype, rng) for name in ("float32", "int32", "int16")
        ],
        transforms=False,
    ),
    OpInfo(
        "slice_scatter",
        aten("slice_scatter", "default"),
        DTYPES,
        _scatter(_slice_shape, [((5, 4), (0, 1, 4, 2)), ((3, 6), (1, 0, 6, 3))]),
    ),
    OpInfo(
        "select_scatter",
        aten("select_scatter", "default"),
        DTYPES,
        _scatter(_select_shape, [((3, 4), (0, 1)), ((3, 4), (1, -1))]),
    ),
    OpInfo(
        "diagonal_scatter",
        aten("diagonal_scatter", "default"),
        DTYPES,
        _scatter(_diagonal_shape, [((3, 4), ()), ((3, 4), (1,)), ((2, 3, 4), (-1, 1, 2))]),
    ),
    OpInfo(
        "as_strided_scatter",
        aten("as_strided_scatter", "default"),
        DTYPES,
        _scatter(lambda shape, size, stride, offset: tuple(size), [((3, 4), ([2, 2], [1, 2], 1))]),
        transforms=False,
    ),
]


def _like(dtype: str, rng, extra=lambda dtype, rng: ()):
    return [Sample((spec, *extra(dtype, rng))) for spec in layouts_of((3, 4), dtype, rng)]


def shape_of(lib, result):
    return lib.zeros_like(result)


def _random(name: str, overload: str, *args):
    call = aten(name, overload)
    return lambda lib, t: shape_of(lib, call(lib, t, *args))


VARIANTS = [
    OpInfo(
        "copy",
        aten("copy", "default"),
        DTYPES,
        lambda dtype, rng: _like(dtype, rng, lambda d, r: (make((4,), d, r),)),
    ),
    OpInfo("fill_Scalar", aten("fill", "Scalar"), DTYPES, lambda dtype, rng: _like(dtype, rng, lambda d, r: (3,))),
    OpInfo("zero", aten("zero", "default"), DTYPES, _like),
    OpInfo(
        "embedding_renorm",
        lambda lib, w, idx: lib.ops.aten.embedding_renorm.default(w, idx, 1.0, 2.0),
        ("float32", "float64"),
        lambda dtype, rng: [Sample((make((5, 3), dtype, rng), T(np.array([0, 2, 2, 4]))))],
        transforms=False,
    ),
]

# The random ones join ``opinfo_random.OPS``, where the transform sweeps treat them as random.
RANDOM_VARIANTS = [
    OpInfo("uniform", _random("uniform", "default", -1.0, 2.0), FLOATS, _like),
    OpInfo("normal_functional", _random("normal_functional", "default", 1.0, 2.0), FLOATS, _like),
    OpInfo("exponential", _random("exponential", "default", 2.0), FLOATS, _like),
    OpInfo("random", _random("random", "default"), ("float32", "int64"), _like),
    OpInfo("random_to", _random("random", "to", 5), ("float32", "int64"), _like),
    OpInfo("random_from", _random("random", "from", 2, 5), ("float32", "int64"), _like),
    OpInfo(
        "bernoulli_Tensor",
        lambda lib, t, p: shape_of(lib, lib.ops.aten.bernoulli.Tensor(t, p)),
        FLOATS,
        lambda dtype, rng: [Sample((make((3, 4), dtype, rng), T(np.full((3, 4), 0.5, np.float32))))],
    ),
]

OPS = [
    *[
        # as_strided's sizes and strides describe one lane's memory: vmap refuses it, and so its copy.
        OpInfo(f"{name}_{overload}", aten(name, overload), DTYPES, _cases(cases), transforms=name != "as_strided_copy")
        for (name, overload), cases in COPIES.items()
    ],
    *SCATTERS,
    *VARIANTS,
]
