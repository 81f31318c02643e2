"""Samples for the ternary pointwise ops (``ember.core.aten.pointwise.ternary``): where, clamp and its
one-sided forms, lerp, addcmul, addcdiv.

Operands broadcast across 0-dim, empty and non-contiguous tensors; Python numbers stand in for
tensors where PyTorch's overloads take Scalars; mixed dtypes check each op's promotion rule.
"""

from __future__ import annotations

import numpy as np
from opinfo import ALL, FLOATS, ErrorSample, OpInfo, Sample, T, layouts_of, make

# Three shapes that broadcast together, 0-dim and empty included.
SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), ()), ((2, 1, 4), (3, 1), (4,)), ((), (), ()), ((0, 3), (3,), (1,))]


def _other(dtype: str) -> str:
    return "float64" if dtype != "float64" else "int32"


def where_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for c_shape, a_shape, b_shape in SHAPES:
        for a in layouts_of(c_shape, dtype, rng):
            cond = make(a_shape, "bool", rng)
            out.append(Sample((cond, a, make(b_shape, dtype, rng)), name=f"{cond} ? {a} : [{b_shape}]"))
    cond, a = make((3, 4), "bool", rng, layout="transposed"), make((3, 4), dtype, rng)
    out.append(Sample((cond, a, make((4,), _other(dtype), rng)), name="mixed dtypes"))
    out.append(Sample((cond, a, make((), "int64", rng)), name="0-dim int64 other"))
    out.append(Sample((make((3, 4), "uint8", rng, low=0, high=2), a, a), name="uint8 condition"))
    return out


def where_scalar_samples(dtype: str, rng) -> list[Sample]:
    """Numbers for input or other (PyTorch's Scalar overloads, which have no out= form)."""
    out = []
    cond, a = make((3, 4), "bool", rng, layout="transposed"), make((3, 4), dtype, rng)
    for scalar in (2, -1.5, True):
        out.append(Sample((cond, a, scalar), name=f"? {a} : {scalar!r}"))
        out.append(Sample((cond, scalar, a), name=f"? {scalar!r} : {a}"))
    out.append(Sample((make((3, 4), "uint8", rng, low=0, high=2), a, 0), name="uint8 condition"))
    out.append(Sample((make((2, 1), "bool", rng), 1.5, 0), name="two numbers"))
    return out


def where_errors():
    x, cond = T(np.ones((2,), np.float32)), T(np.ones((2,), np.bool_))
    return [
        ErrorSample(Sample((x, x, x)), RuntimeError, "boolean tensor"),
        ErrorSample(Sample((cond, x, x), {"out": T(np.zeros((2,), np.int64))}), RuntimeError, "Expected out type"),
        ErrorSample(Sample((cond, x, 1.0), {"out": T(np.zeros((2,), np.float32))}), TypeError, "must be Tensor"),
    ]


def clamp_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for a in layouts_of((3, 4), dtype, rng):
        out.append(Sample((a,), {"min": -2, "max": 3}, name=f"{a} [-2, 3]"))
    for shape in ((), (0,), (2, 3, 4)):
        out.append(Sample((make(shape, dtype, rng),), {"min": 1}, name=f"{shape} min=1"))
    a = make((3, 4), dtype, rng)
    for kwargs in ({"max": 2.5}, {"min": -1.5}, {"min": 4, "max": -4}, {"min": True}, {"min": 0}):
        out.append(Sample((a,), kwargs, name=f"{a} {kwargs}"))
    lo, hi = make((4,), dtype, rng, low=-9, high=1), make((3, 1), dtype, rng, low=0, high=9)
    out.append(Sample((a,), {"min": lo, "max": hi}, name="tensor bounds"))
    out.append(Sample((a,), {"min": lo}, name="tensor min"))
    out.append(Sample((a,), {"max": make((), _other(dtype), rng)}, name="0-dim max of another dtype"))
    out.append(Sample((make((4,), dtype, rng),), {"min": make((2, 4), dtype, rng)}, name="broadcast bigger"))
    # A 0-dim tensor beside a number is taken as a number (the Scalar overload).
    out.append(Sample((a,), {"min": make((), _other(dtype), rng), "max": 5}, name="0-dim tensor and number"))
    if dtype in FLOATS:
        edges = T(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 5.0], a.array.dtype))
        out.append(Sample((edges,), {"min": -1.0, "max": 1.0}, name="edges"))
        out.append(Sample((a,), {"min": float("nan")}, name="nan min"))
    return out


def clamp_errors():
    x = T(np.ones((2,), np.float32))
    return [
        ErrorSample(Sample((x,)), RuntimeError, "At least one of 'min' or 'max'"),
        ErrorSample(Sample((T(np.ones((2,), np.bool_)),), {"min": True}), NotImplementedError, "Bool"),
        ErrorSample(Sample((x,), {"min": 1, "out": T(np.zeros((2,), np.float64))}), RuntimeError, "Found dtype Double"),
        ErrorSample(Sample((T(np.ones((2,), np.complex64)),), {"max": 1}), NotImplementedError, "complex"),
        ErrorSample(Sample((x,), {"min": x, "max": 2}), TypeError, "invalid combination"),
    ]


def one_bound_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for a in layouts_of((3, 4), dtype, rng):
        out.append(Sample((a, 1), name=f"{a} 1"))
    a = make((3, 4), dtype, rng)
    out.append(Sample((a, -2.5), name="float bound"))
    out.append(Sample((a, make((4,), dtype, rng)), name="tensor bound"))
    out.append(Sample((make((), dtype, rng), make((2,), _other(dtype), rng)), name="0-dim self"))
    return out


def lerp_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for s_shape, e_shape, w_shape in SHAPES:
        for a in layouts_of(s_shape, dtype, rng):
            end, weight = make(e_shape, dtype, rng), make(w_shape, dtype, rng, low=-1, high=2)
            out.append(Sample((a, end, weight), name=f"{a} -> [{e_shape}] w[{w_shape}]"))
    a, end = make((3, 4), dtype, rng), make((4,), dtype, rng)
    for weight in (0.0, 0.3, 0.5, 0.7, 1.0, 2.0, -1.0, 3):
        out.append(Sample((a, end, weight), name=f"weight={weight}"))
    out.append(Sample((a, end, make((), "float64", rng, low=0, high=1)), name="0-dim float64 weight"))
    if dtype in FLOATS:
        edges = T(np.array([np.nan, np.inf, -np.inf, -0.0, 1.0], a.array.dtype))
        out.append(Sample((edges, T(np.array([1.0, 2.0, np.inf, 0.0, -np.inf], a.array.dtype)), 0.25), name="edges"))
    return out


def lerp_errors():
    f, d = T(np.ones((2,), np.float32)), T(np.ones((2,), np.float64))
    i = T(np.ones((2,), np.int64))
    return [
        ErrorSample(Sample((f, d, 0.5)), RuntimeError, "expected dtype float for `end`"),
        ErrorSample(Sample((i, i, 0.5)), NotImplementedError, "lerp_kernel_scalar"),
        ErrorSample(Sample((f, 1.0, 0.5)), TypeError, "must be Tensor"),
    ]


def addc_samples(values, nonzero=False):
    def samples(dtype: str, rng) -> list[Sample]:
        low = 1 if nonzero and dtype not in ("bool", "uint8") else (-9 if dtype != "uint8" else 0)
        out = []
        for s_shape, t1_shape, t2_shape in SHAPES:
            for a in layouts_of(s_shape, dtype, rng):
                t1, t2 = make(t1_shape, dtype, rng), make(t2_shape, dtype, rng, low=low)
                out.append(Sample((a, t1, t2), name=f"{a} [{t1_shape}] [{t2_shape}]"))
        a, t1, t2 = make((3, 4), dtype, rng), make((4,), dtype, rng), make((3, 1), dtype, rng, low=low)
        for value in values(dtype):
            out.append(Sample((a, t1, t2), {"value": value}, name=f"value={value!r}"))
        other = _other(dtype)
        out.append(Sample((a, make((4,), other, rng, low=1), t2), name=f"tensor1 {other}"))
        out.append(Sample((make((4,), other, rng, low=1), t1, t2), name=f"self {other}"))
        return out

    return samples


def _values(dtype: str):
    if dtype == "bool":
        return (True, 2)
    if dtype.startswith("complex"):
        return (2, 0.5, 1j)
    return (2, 0.5, -1)


def addcdiv_errors():
    i = T(np.ones((2,), np.int64))
    f = T(np.ones((2,), np.float32))
    return [
        ErrorSample(Sample((f, i, i)), RuntimeError, "Integer division with addcdiv"),
        ErrorSample(Sample((f, f, 2.0)), TypeError, "must be Tensor"),
    ]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _inplace(name):
    return lambda lib, self, *a, **k: getattr(self, name + "_")(*a, **k)


OPS = [
    OpInfo("where", _call("where"), ALL, where_samples, errors=where_errors, out=True),
    OpInfo("where_scalars", _call("where"), ALL, where_scalar_samples),
    OpInfo("where_method", lambda lib, c, a, b: a.where(c, b), ALL, where_samples),
    OpInfo("clamp", _call("clamp"), ALL, clamp_samples, errors=clamp_errors, inplace=_inplace("clamp"), out=True),
    OpInfo("clip", _call("clip"), ("float32", "int64"), clamp_samples, inplace=_inplace("clip"), out=True),
    OpInfo("clamp_min", _call("clamp_min"), ALL, one_bound_samples, inplace=_inplace("clamp_min"), out=True),
    OpInfo("clamp_max", _call("clamp_max"), ALL, one_bound_samples, inplace=_inplace("clamp_max"), out=True),
    OpInfo("lerp", _call("lerp"), ALL, lerp_samples, errors=lerp_errors, inplace=_inplace("lerp"), out=True),
    OpInfo("addcmul", _call("addcmul"), ALL, addc_samples(_values), inplace=_inplace("addcmul"), out=True),
    OpInfo(
        "addcdiv",
        _call("addcdiv"),
        ALL,
        addc_samples(_values, nonzero=True),
        errors=addcdiv_errors,
        inplace=_inplace("addcdiv"),
        out=True,
    ),
]
