"""Samples for the binary pointwise family (``ember.core.aten.pointwise.binary``)."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ALL_REAL, FLOATS, INTS, ErrorSample, OpInfo, Sample, T, layouts_of, make

# Pairs of shapes that broadcast, 0-dim and empty included.
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((5,), ()), ((0, 3), (3,)), ((), ())]


def binary_samples(low=-9, high=9, nonzero_other=False, scalars=(2, -1.5, True)):
    def samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
        out = []
        for a_shape, b_shape in SHAPES:
            for a in layouts_of(a_shape, dtype, rng, low=low, high=high):
                b = make(b_shape, dtype, rng, low=low, high=high)
                if nonzero_other and dtype != "bool":
                    b = T(np.where(b.array == 0, np.ones_like(b.array), b.array))
                out.append(Sample((a, b), name=f"{a} . {b}"))
        shape = (3, 4)
        a = make(shape, dtype, rng, low=low, high=high)
        for scalar in scalars:
            out.append(Sample((a, scalar), name=f"{a} . {scalar!r}"))
        # Mixed dtypes: promotion across categories and with a 0-dim tensor.
        other = "float64" if dtype != "float64" else "int32"
        out.append(Sample((a, make((4,), other, rng, low=1, high=high)), name=f"{a} . {other}[4]"))
        out.append(Sample((a, make((), "int64", rng, low=1, high=high)), name=f"{a} . int64[]"))
        return out

    return samples


def op(name, dtypes=ALL_REAL, inplace=True, out=True, samples=None, errors=lambda: [], **kw) -> OpInfo:
    fn = name

    def call(lib, *args, **kwargs):
        return getattr(lib, fn)(*args, **kwargs)

    def call_inplace(lib, self, *args, **kwargs):
        return getattr(self, fn + "_")(*args, **kwargs)

    return OpInfo(
        name,
        call,
        dtypes,
        samples or binary_samples(),
        errors=errors,
        inplace=call_inplace if inplace else None,
        out=out,
        **kw,
    )


def _mismatch_errors():
    return [
        ErrorSample(
            Sample((T(np.ones((2, 3), np.float32)), T(np.ones((4,), np.float32)))), RuntimeError, "must match the size"
        ),
        ErrorSample(
            Sample((T(np.ones((2,), np.int64)), T(np.ones((2,), np.int64))), {"alpha": 1.5}), RuntimeError, "alpha"
        ),
    ]


def _sub_errors():
    bools = T(np.ones((2,), np.bool_))
    return [ErrorSample(Sample((bools, bools)), RuntimeError, "logical_xor"), *_mismatch_errors()]


def _with_alpha(base):
    def samples(dtype, rng):
        out = base(dtype, rng)
        a, b = make((3, 4), dtype, rng), make((4,), dtype, rng)
        alpha = {"bool": True}.get(dtype, 2 if dtype in INTS else 0.5)
        out.append(Sample((a, b), {"alpha": alpha}, name=f"{a} . {b} alpha={alpha}"))
        return out

    return samples


def _div_samples(rounding_mode):
    base = binary_samples(nonzero_other=True, scalars=(2, -1.5))

    def samples(dtype, rng):
        out = base(dtype, rng)
        if rounding_mode is not None:
            out = [Sample(s.args, {"rounding_mode": rounding_mode}, s.name) for s in out]
        if dtype in FLOATS:  # division by zero is IEEE for floats
            a = make((4,), dtype, rng)
            zero = T(np.array([0, -0.0, 0, 1], dtype=a.array.dtype))
            out.append(Sample((a, zero), {"rounding_mode": rounding_mode} if rounding_mode else {}, name="by zero"))
        return out

    return samples


def _div_errors():
    ints = T(np.array([1, 2], np.int64))
    zero = T(np.array([1, 0], np.int64))
    return [
        ErrorSample(Sample((ints, zero), {"rounding_mode": "floor"}), RuntimeError, "ZeroDivisionError"),
        ErrorSample(Sample((ints, ints), {"rounding_mode": "round"}), RuntimeError, "rounding_mode"),
    ]


def _pow_samples(dtype, rng):
    base = binary_samples(low=0, high=4, scalars=(2, 0.5, 3))(dtype, rng)
    if dtype in FLOATS:
        base.append(
            Sample((make((5,), dtype, rng, low=-3, high=3), make((5,), dtype, rng, low=-2, high=2)), name="neg")
        )
    return base


def _shift_samples(dtype, rng):
    out = []
    for a in layouts_of((3, 4), dtype, rng, low=-50, high=50):
        out.append(Sample((a, make((4,), dtype, rng, low=0, high=7)), name=f"{a} << small"))
    out.append(Sample((make((3,), dtype, rng), 2), name="scalar shift"))
    return out


OPS = [
    op("add", ALL, samples=_with_alpha(binary_samples()), errors=_mismatch_errors),
    op("sub", ALL, samples=_with_alpha(binary_samples()), errors=_sub_errors),
    op("mul", ALL),
    op("div", ALL, samples=_div_samples(None)),
    OpInfo(
        "div_trunc",
        lambda lib, *a, **k: lib.div(*a, **k),
        ALL_REAL,
        _div_samples("trunc"),
        errors=_div_errors,
        inplace=lambda lib, self, *a, **k: self.div_(*a, **k),
        out=True,
    ),
    OpInfo(
        "div_floor",
        lambda lib, *a, **k: lib.div(*a, **k),
        ALL_REAL,
        _div_samples("floor"),
        inplace=lambda lib, self, *a, **k: self.div_(*a, **k),
        out=True,
    ),
    op("floor_divide", ALL_REAL, samples=binary_samples(nonzero_other=True, scalars=(2, -1.5))),
    op("remainder", ALL_REAL, samples=binary_samples(nonzero_other=True, scalars=(3, -2.5))),
    op("fmod", ALL_REAL, samples=binary_samples(nonzero_other=True, scalars=(3, -2.5))),
    op("pow", ALL, samples=_pow_samples),
    op("maximum", ALL_REAL, inplace=False),
    op("minimum", ALL_REAL, inplace=False),
    op("fmax", ALL_REAL, inplace=False),
    op("fmin", ALL_REAL, inplace=False),
    op("atan2", ALL_REAL),
    op("hypot", FLOATS),
    op("logaddexp", ALL_REAL, inplace=False),
    op("logaddexp2", ALL_REAL, inplace=False),
    op("copysign", ALL_REAL),
    op("heaviside", ALL_REAL),
    *(op(name, ALL) for name in ("eq", "ne")),
    *(op(name, ALL_REAL) for name in ("lt", "le", "gt", "ge")),
    *(op(name, ALL) for name in ("logical_and", "logical_or", "logical_xor")),
    *(op(name, (*INTS, "bool")) for name in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    *(op(name, INTS, samples=_shift_samples) for name in ("bitwise_left_shift", "bitwise_right_shift")),
]
