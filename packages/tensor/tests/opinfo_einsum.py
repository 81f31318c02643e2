"""Samples for ``einsum`` (``ember.core.aten.linalg.einsum``): contractions, implicit outputs, diagonals,
ellipses that broadcast, labels of size 1, three operands (with and without ``path``), the sublist
format, and the equation errors PyTorch reports."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, layouts_of, make

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ba", [(3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(2, 2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->", [(2, 3, 2)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("b...,b...->...", [(2, 3, 4), (2, 3, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("i...->...", [(3, 2, 2)]),
    ("...->...", [(2, 3)]),
    ("ij...,jk...->ik", [(2, 3, 4), (3, 2, 4)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("ij,jk->ijk", [(2, 3), (1, 4)]),
    ("Ab,bC->CA", [(2, 3), (3, 4)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("ij,kl->", [(2, 3), (2, 2)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
    ("ij,jk->ik", [(2, 0), (0, 4)]),
]


def _samples(dtype: str, rng) -> list[Sample]:
    out = []
    for equation, shapes in EQUATIONS:
        rest = [make(s, dtype, rng, low=-3, high=4) for s in shapes[1:]]
        for first in layouts_of(shapes[0], dtype, rng, low=-3, high=4):
            out.append(Sample((equation, first, *rest), name=f"{equation!r} {first} {rest}"))
    a, b = make((2, 3), dtype, rng, low=-3, high=4), make((3, 4), dtype, rng, low=-3, high=4)
    out.append(Sample(("ij,jk->ik", [a, b]), name="operands as a list"))
    out.append(Sample((a, [0, 1], b, [1, 2], [0, 2]), name="sublist format"))
    out.append(Sample((a, [Ellipsis, 1], b, [1, 2]), name="sublist format, ellipsis, implicit output"))
    c = make((4, 2), dtype, rng, low=-3, high=4)
    out.append(Sample(("ab,bc,cd->ad", a, b, c), name="path (1, 2), (0, 1)"))
    return out


def _path_samples(dtype: str, rng) -> list[Sample]:
    a, b, c = (make(s, dtype, rng, low=-3, high=4) for s in [(2, 3), (3, 4), (4, 2)])
    return [
        Sample(("ab,bc,cd->ad", a, b, c), {"path": [1, 2, 0, 1]}, "path right first"),
        Sample(("ab,bc,cd->ad", a, b, c), {"path": [0, 2, 0, 1]}, "path outer first"),
    ]


def _ones(*shape) -> T:
    return T(np.ones(shape, np.float32))


def _errors() -> list[ErrorSample]:
    a, b = _ones(2, 3), _ones(3, 4)
    return [
        ErrorSample(Sample(("ij,jk->ik", a)), RuntimeError, "fewer operands"),
        ErrorSample(Sample(("ij->ik", a)), RuntimeError, "output subscript k does not appear"),
        ErrorSample(Sample(("ij->ii", a)), RuntimeError, "appears more than once in the output"),
        ErrorSample(Sample(("i.j->ij", a)), RuntimeError, "not part of any ellipsis"),
        ErrorSample(Sample(("......->", a)), RuntimeError, "ellipsis was already found"),
        ErrorSample(Sample(("ijk", a)), RuntimeError, r"subscripts in the equation \(3\) does not match"),
        ErrorSample(Sample(("ijk...", a)), RuntimeError, "is more than the number of dimensions"),
        ErrorSample(Sample(("i1", a)), RuntimeError, "invalid subscript given at index 1"),
        ErrorSample(Sample(("ii", a)), RuntimeError, "is repeated for operand 0 but the sizes don't match"),
        ErrorSample(Sample(("ij,jk", a, _ones(4, 5))), RuntimeError, "does not broadcast"),
        ErrorSample(Sample(("...i,...i", _ones(2, 3), _ones(4, 3))), RuntimeError, "covered by ellipsis"),
        ErrorSample(Sample(("ij,jk->ik", a, b, a)), RuntimeError, "more operands"),
        ErrorSample(Sample(("ij",)), ValueError, "at least one operand"),
        ErrorSample(Sample(("ij,jk", a, [[1.0]])), TypeError, "expected Tensor"),
        ErrorSample(Sample((a, [0, 60])), ValueError, "valid range"),
        ErrorSample(Sample(("ij,jk->ik", a, b), {"path": [0]}), RuntimeError, "to have size 2"),
    ]


def _call(lib, *args, path=None):
    if path is None:
        return lib.einsum(*args)
    # PyTorch takes a path only through the op (its Python wrapper computes one with opt_einsum).
    equation, *operands = args
    return lib.ops.aten.einsum(equation, operands, path=path)


OPS = [
    OpInfo("einsum", _call, ALL, _samples, _errors),
    OpInfo("einsum_path", _call, ("float32", "int64"), _path_samples),
]
