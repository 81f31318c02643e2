"""Samples for the composite products (``ember.core.aten.linalg.products``): addmv, addr, addbmm, kron.

Each runs with the scalars PyTorch takes per dtype (bool, integral, float), with ``beta=0`` over a
nan ``self`` (ignored), broadcasting ``self``, non-contiguous operands and empty sizes.
"""

from __future__ import annotations

import numpy as np
from opinfo import ALL_REAL, FLOATS, ErrorSample, OpInfo, Sample, T, layouts_of, make

NUMERIC = (*FLOATS, "int64", "int32")


def _scalars(dtype: str) -> list[dict]:
    if dtype == "bool":
        return [{"beta": False}, {"alpha": True, "beta": True}]
    if dtype in ("int8", "int16", "int32", "int64", "uint8"):
        return [{"beta": 2, "alpha": 3}, {"beta": 0}]
    return [{"beta": 0.5, "alpha": -2.0}, {"beta": 0}, {"alpha": 0}]


def _with_scalars(base):
    def samples(dtype: str, rng) -> list[Sample]:
        out = base(dtype, rng)
        for kwargs in _scalars(dtype):
            out.extend(Sample(s.args, kwargs, f"{s.name} {kwargs}") for s in list(out[:2]))
        return out

    return samples


def _addmv_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for self_shape in [(3,), (1,), ()]:
        for mat in layouts_of((3, 4), dtype, rng, low=-3, high=4):
            vec = make((4,), dtype, rng, low=-3, high=4)
            out.append(Sample((make(self_shape, dtype, rng, low=-3, high=4), mat, vec), name=f"{self_shape} {mat}"))
    out.append(Sample((make((0,), dtype, rng), make((0, 2), dtype, rng), make((2,), dtype, rng)), name="empty"))
    return out


def _addr_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for self_shape in [(3, 4), (4,), (3, 1), ()]:
        for v1 in layouts_of((3,), dtype, rng, low=-3, high=4):
            v2 = make((4,), dtype, rng, low=-3, high=4)
            out.append(Sample((make(self_shape, dtype, rng, low=-3, high=4), v1, v2), name=f"{self_shape} {v1}"))
    return out


def _addbmm_samples(dtype: str, rng, self_shapes=((3, 5),)) -> list[Sample]:
    out = []
    for self_shape in self_shapes:
        for b1 in layouts_of((2, 3, 4), dtype, rng, low=-3, high=4):
            b2 = make((2, 4, 5), dtype, rng, low=-3, high=4)
            out.append(Sample((make(self_shape, dtype, rng, low=-3, high=4), b1, b2), name=f"{self_shape} {b1}"))
    return out


def _nan_self(shapes):
    def samples(dtype: str, rng) -> list[Sample]:
        self = T(np.full(shapes[0], np.nan, np.float32))
        rest = tuple(make(s, "float32", rng) for s in shapes[1:])
        return [Sample((self, *rest), {"beta": 0}, "nan self, beta 0"), Sample((self, *rest), {}, "nan self")]

    return samples


def _kron_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for a_shape, b_shape in [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 1, 2), (3,)), ((), (2,)), ((0, 2), (2, 3))]:
        for a in [make(a_shape, dtype, rng)]:
            out.append(Sample((a, make(b_shape, dtype, rng)), name=f"{a} x {b_shape}"))
    out.append(Sample((make((2, 2), dtype, rng), make((2,), "float64", rng)), name="promotes"))
    return out


def _ones(*shape, dtype=np.float32):
    return T(np.ones(shape, dtype))


def _errors(name):
    def errors() -> list[ErrorSample]:
        if name == "addmv":
            return [
                ErrorSample(Sample((_ones(3), _ones(3, 4), _ones(3))), RuntimeError, "size mismatch"),
                ErrorSample(Sample((_ones(3), _ones(3), _ones(3))), RuntimeError, "matrix @ vector expected"),
                ErrorSample(Sample((_ones(2), _ones(3, 4), _ones(4))), RuntimeError, None),
                ErrorSample(Sample((_ones(3), _ones(3, 4, dtype=np.float64), _ones(4))), RuntimeError, "dtype"),
            ]
        if name == "addr":
            return [
                ErrorSample(Sample((_ones(3, 4), _ones(3, 1), _ones(4))), RuntimeError, "1-D argument vec1"),
                ErrorSample(Sample((_ones(3, 4), _ones(3), _ones(4, 1))), RuntimeError, "1-D argument vec2"),
                ErrorSample(
                    Sample(
                        (T(np.ones((2, 2), np.int64)), T(np.ones(2, np.int64)), T(np.ones(2, np.int64))), {"beta": 0.5}
                    ),
                    RuntimeError,
                    "must not be a floating point number",
                ),
            ]
        if name == "addbmm":
            return [
                ErrorSample(Sample((_ones(3, 5), _ones(3, 4), _ones(2, 4, 5))), RuntimeError, None),
                ErrorSample(Sample((_ones(3, 5), _ones(2, 3, 4), _ones(3, 4, 5))), RuntimeError, None),
            ]
        return []

    return errors


def _method(name):
    return lambda lib, self, *a, **k: getattr(self, name)(*a, **k)


def _op(name, samples, dtypes, inplace=True, **kw) -> OpInfo:
    return OpInfo(
        name,
        lambda lib, *a, **k: getattr(lib, name)(*a, **k),
        dtypes,
        samples,
        _errors(name),
        _method(name + "_") if inplace else None,
        True,
        **kw,
    )


def _vander_samples(dtype: str, rng) -> list[Sample]:
    out = [Sample((x,), name=f"{x}") for x in layouts_of((4,), dtype, rng, low=-3, high=4)]
    x = make((3,), dtype, rng, low=-3, high=4)
    for kwargs in ({"N": 2}, {"N": 0}, {"N": 1}, {"N": 5, "increasing": True}, {"increasing": True}):
        out.append(Sample((x,), kwargs, f"{kwargs}"))
    out.append(Sample((make((0,), dtype, rng),), name="empty"))
    return out


def _vander_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(2, 2),)), RuntimeError, "x must be a one-dimensional tensor"),
        ErrorSample(Sample((_ones(2), -1)), RuntimeError, "N must be non-negative"),
    ]


OPS = [
    _op("addmv", _with_scalars(_addmv_samples), NUMERIC),
    _op("addr", _with_scalars(_addr_samples), ALL_REAL),
    # float16: PyTorch's CPU kernel rounds after each batch's product, the composite once at the end.
    _op("addbmm", _with_scalars(_addbmm_samples), NUMERIC, tolerances={"float16": (2e-3, 4e-3)}),
    OpInfo("Tensor.addmv", _method("addmv"), ("float32",), _addmv_samples),
    OpInfo("Tensor.addr", _method("addr"), ("float32",), _addr_samples),
    OpInfo("Tensor.addbmm", _method("addbmm"), ("float32",), _addbmm_samples),
    # A self that broadcasts: PyTorch's in-place form resizes self there, so only the functional form runs.
    OpInfo(
        "addbmm_broadcast_self",
        lambda lib, *a, **k: lib.addbmm(*a, **k),
        NUMERIC,
        lambda dtype, rng: _addbmm_samples(dtype, rng, ((5,), (1, 5), ())),
        out=True,
        tolerances={"float16": (2e-3, 4e-3)},
    ),
    OpInfo("addmv_nan_self", lambda lib, *a, **k: lib.addmv(*a, **k), ("float32",), _nan_self([(3,), (3, 4), (4,)])),
    OpInfo("addr_nan_self", lambda lib, *a, **k: lib.addr(*a, **k), ("float32",), _nan_self([(3, 4), (3,), (4,)])),
    _op("kron", _kron_samples, ALL_REAL, inplace=False),
    OpInfo("vander", lambda lib, *a, **k: lib.vander(*a, **k), ALL_REAL, _vander_samples, _vander_errors),
    OpInfo("Tensor.kron", _method("kron"), ("float32",), _kron_samples),
]
