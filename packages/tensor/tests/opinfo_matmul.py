"""Samples for the matrix products (``ember.core.aten.linalg.matmul``): mm, bmm, addmm, baddbmm, dot, vdot, mv,
outer, matmul (every pairing of 1-D, 2-D and batched operands, the folded and broadcast paths) and
``nn.functional.linear``. Values are small so that float16 sums stay exact enough to compare."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ALL_REAL, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make

F32 = np.float32


def _ones(*shape, dtype=F32) -> T:
    return T(np.ones(shape, dtype))


def _pairs(shapes, low=-3, high=4):
    """Both operands of each pair of shapes, the first in every layout that applies, the second too."""

    def samples(dtype: str, rng) -> list[Sample]:
        out = []
        for a_shape, b_shape in shapes:
            for a in layouts_of(a_shape, dtype, rng, low=low, high=high):
                b = make(b_shape, dtype, rng, low=low, high=high)
                out.append(Sample((a, b), name=f"{a} @ {b}"))
            a = make(a_shape, dtype, rng, low=low, high=high)
            for b in layouts_of(b_shape, dtype, rng, low=low, high=high)[1:]:
                out.append(Sample((a, b), name=f"{a} @ {b}"))
        return out

    return samples


MM_SHAPES = [((2, 3), (3, 4)), ((4, 1), (1, 5)), ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((1, 6), (6, 1))]
BMM_SHAPES = [((2, 3, 4), (2, 4, 5)), ((3, 1, 2), (3, 2, 2)), ((0, 2, 3), (0, 3, 1)), ((2, 2, 0), (2, 0, 3))]
MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),  # folded into one mm
    ((5, 2, 3), (3,)),  # folded into one mv
    ((3,), (5, 3, 4)),  # folded, transposed
    ((2, 3), (5, 3, 4)),  # a matrix against a batch: bmm
    ((2, 1, 2, 3), (4, 3, 5)),  # broadcast batches
    ((2, 4, 3), (1, 3, 2)),
    ((4, 2, 3), (4, 3)),
    ((2, 2, 3), (2, 3, 3)),
    ((0, 2, 3), (3, 4)),
    ((2, 0), (0, 3)),
    ((3, 2, 3), (3, 3, 0)),
]


def _scaled(samples_of, extra):
    """Samples of ``samples_of`` again with each keyword set of ``extra``."""

    def samples(dtype: str, rng) -> list[Sample]:
        base = samples_of(dtype, rng)
        out = list(base)
        for kwargs in extra(dtype):
            out.extend(Sample(s.args, kwargs, f"{s.name} {kwargs}") for s in base[:3])
        return out

    return samples


def _addmm_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for self_shape in [(2, 4), (4,), (1, 4), (2, 1), ()]:
        for m1 in layouts_of((2, 3), dtype, rng, low=-3, high=4):
            out.append(
                Sample((make(self_shape, dtype, rng, low=-3, high=4), m1, make((3, 4), dtype, rng, low=-3, high=4)))
            )
    m1, m2 = make((2, 3), dtype, rng, low=-3, high=4), make((3, 4), dtype, rng, low=-3, high=4)
    out.append(Sample((make((2, 4), dtype, rng, layout="transposed"), m1, m2)))
    out.append(Sample((make((3, 4), dtype, rng), m1, m2), name="self does not broadcast"))
    out.append(Sample((make((2, 4), "float64" if dtype != "float64" else "float32", rng), m1, m2), name="self dtype"))
    out.append(Sample((make((2, 4), dtype, rng), m1, make((4, 4), dtype, rng)), name="shapes"))
    return out


def _addmm_scalars(dtype: str):
    if dtype == "bool":
        return [{"beta": False}]
    if dtype in ("int8", "int16", "int32", "int64", "uint8"):
        return [{"beta": 2, "alpha": 3}, {"beta": 0}]
    return [{"beta": 0.5, "alpha": -2.0}, {"beta": 0}, {"alpha": 0}]


def _addmm_nan_self(dtype: str, rng) -> list[Sample]:
    # beta=0 ignores self entirely, nan included.
    self = T(np.full((2, 4), np.nan, np.float32))
    m1, m2 = make((2, 3), "float32", rng), make((3, 4), "float32", rng)
    return [Sample((self, m1, m2), {"beta": 0}, "nan self, beta 0"), Sample((self, m1, m2), {"beta": 1}, "nan self")]


def _baddbmm_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for self_shape in [(2, 3, 5), (5,), (3, 1), (1, 3, 5)]:
        for b1 in layouts_of((2, 3, 4), dtype, rng, low=-3, high=4):
            b2 = make((2, 4, 5), dtype, rng, low=-3, high=4)
            out.append(Sample((make(self_shape, dtype, rng, low=-3, high=4), b1, b2)))
    return out


def _vector_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for n in (5, 1, 0):
        for a in layouts_of((n,), dtype, rng, low=-3, high=4):
            out.append(Sample((a, make((n,), dtype, rng, low=-3, high=4)), name=f"{a} . [{n}]"))
    return out


def _outer_samples(dtype: str, rng) -> list[Sample]:
    out = [Sample((a, make((4,), dtype, rng)), name=f"{a} x [4]") for a in layouts_of((3,), dtype, rng)]
    out.append(Sample((make((3,), dtype, rng), make((2,), "float64", rng)), name="promotes"))
    out.append(Sample((make((0,), dtype, rng), make((2,), dtype, rng)), name="empty"))
    return out


def _linear_samples(dtype: str, rng) -> list[Sample]:
    out = []
    w = make((4, 3), dtype, rng, low=-3, high=4)
    for x_shape in [(2, 3), (3,), (5, 2, 3), (2, 2, 2, 3), (0, 3)]:
        for x in layouts_of(x_shape, dtype, rng, low=-3, high=4):
            out.append(Sample((x, w), name=f"{x} no bias"))
            out.append(Sample((x, w, make((4,), dtype, rng, low=-3, high=4)), name=f"{x} bias"))
    x = make((2, 3), dtype, rng, low=-3, high=4)
    out.append(Sample((x, w, make((2, 4), dtype, rng)), name="2-D bias"))
    out.append(Sample((x, w, make((), dtype, rng)), name="0-D bias"))
    out.append(Sample((x, make((3,), dtype, rng)), name="1-D weight"))
    out.append(Sample((make((5, 2, 3), dtype, rng, layout="transposed"), w, make((1, 4), dtype, rng)), name="bcast"))
    out.append(Sample((x, w, make((3,), dtype, rng)), name="bias mismatch"))
    out.append(Sample((x, make((4, 5), dtype, rng)), name="weight mismatch"))
    return out


def _mm_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(2, 3), _ones(4, 5))), RuntimeError, r"shapes cannot be multiplied \(2x3 and 4x5\)"),
        ErrorSample(Sample((_ones(2, 3), _ones(3))), RuntimeError, "mat2 must be a matrix"),
        ErrorSample(Sample((_ones(3), _ones(3, 2))), RuntimeError, "self must be a matrix"),
        ErrorSample(Sample((_ones(2, 3), _ones(3, 2, dtype=np.float64))), RuntimeError, "same dtype"),
        ErrorSample(Sample((T(np.ones((2, 3), bool)), T(np.ones((3, 2), bool)))), NotImplementedError, "Bool"),
        ErrorSample(Sample((_ones(2, 3), 2.0)), TypeError, "must be Tensor"),
    ]


def _bmm_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(2, 3), _ones(2, 3, 4))), RuntimeError, "batch1 must be a 3D tensor"),
        ErrorSample(Sample((_ones(2, 3, 4), _ones(3, 4, 5))), RuntimeError, r"to be: \[2, 4\] but got: \[3, 4\]"),
        ErrorSample(Sample((_ones(2, 3, 4), _ones(2, 4, 5, dtype=np.float64))), RuntimeError, "scalar type"),
    ]


def _addmm_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(3), _ones(2, 3), _ones(3, 4))), RuntimeError, "expanded size"),
        ErrorSample(Sample((_ones(4), _ones(2, 3), _ones(3))), RuntimeError, "mat2 must be a matrix"),
        ErrorSample(Sample((_ones(4), _ones(2, 3), _ones(3, 4)), {"alpha": 1j}), RuntimeError, "converted"),
    ]


def _dot_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(2, 3), _ones(3))), RuntimeError, "1D tensors expected, but got 2D and 1D"),
        ErrorSample(Sample((_ones(3), _ones(4))), RuntimeError, "inconsistent tensor size"),
        ErrorSample(Sample((_ones(3), _ones(3, dtype=np.float64))), RuntimeError, "same dtype"),
    ]


def _mv_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(2, 3), _ones(4))), RuntimeError, r"size mismatch, got input \(2\), mat \(2x3\)"),
        ErrorSample(Sample((_ones(3), _ones(3))), RuntimeError, "vector \\+ matrix @ vector expected"),
    ]


def _matmul_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((T(np.float32(1)), _ones(2, 3))), RuntimeError, "at least 1D, but they are 0D and 2D"),
        ErrorSample(Sample((_ones(2, 3, 4), _ones(3, 5, 6))), RuntimeError, "must match the size"),
        ErrorSample(Sample((_ones(2, 3, 4), _ones(5))), RuntimeError, "size mismatch"),
        ErrorSample(Sample((_ones(2, 4, 3), _ones(3, 3, 2))), RuntimeError, "must match the size"),
        ErrorSample(Sample((_ones(4), _ones(5))), RuntimeError, "inconsistent tensor size"),
    ]


def _linear_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((T(np.float32(1)), _ones(2, 3))), RuntimeError, "at least 1D"),
        ErrorSample(Sample((_ones(2, 3), _ones(4, 5))), RuntimeError, "cannot be multiplied"),
        ErrorSample(Sample((_ones(2, 3), _ones(4, 3), _ones(4, dtype=np.float64))), RuntimeError, "same dtype"),
        ErrorSample(Sample((_ones(2, 3), [[1.0]])), TypeError, "must be Tensor"),
    ]


def _method(name):
    return lambda lib, self, *a, **k: getattr(self, name)(*a, **k)


def _op(name, samples, dtypes=ALL, errors=lambda: [], inplace=None, out=True, **kw) -> OpInfo:
    return OpInfo(name, lambda lib, *a, **k: getattr(lib, name)(*a, **k), dtypes, samples, errors, inplace, out, **kw)


OPS = [
    _op("mm", _pairs(MM_SHAPES), errors=_mm_errors),
    _op("bmm", _pairs(BMM_SHAPES), errors=_bmm_errors),
    _op("matmul", _pairs(MATMUL_SHAPES), errors=_matmul_errors),
    OpInfo("matmul_operator", lambda lib, a, b: a @ b, ALL, _pairs(MATMUL_SHAPES[:9]), _matmul_errors),
    OpInfo("Tensor.matmul", lambda lib, a, b: a.matmul(b), ALL_REAL, _pairs(MATMUL_SHAPES[4:8])),
    _op(
        "addmm",
        _scaled(_addmm_samples, _addmm_scalars),
        errors=_addmm_errors,
        inplace=_method("addmm_"),
    ),
    OpInfo("addmm_nan_self", lambda lib, *a, **k: lib.addmm(*a, **k), ("float32",), _addmm_nan_self),
    _op("baddbmm", _scaled(_baddbmm_samples, _addmm_scalars), inplace=_method("baddbmm_")),
    _op("dot", _vector_samples, errors=_dot_errors),
    _op("vdot", _vector_samples, errors=_dot_errors),
    _op("mv", _pairs([((2, 3), (3,)), ((0, 3), (3,)), ((2, 0), (0,))]), errors=_mv_errors),
    _op("outer", _outer_samples),
    _op("ger", _outer_samples),
    OpInfo(
        "nn.functional.linear",
        lambda lib, *a, **k: functional(lib).linear(*a, **k),
        ALL,
        _linear_samples,
        _linear_errors,
    ),
]
