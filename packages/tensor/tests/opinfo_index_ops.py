"""Samples for the ops that index along one dimension or into the flattened tensor
(``ember.core.aten.indexing.index_ops``, ``scatter_gather``): index_select, index_add, index_copy,
index_fill, take, put, gather, scatter (src, value, legacy reduce), scatter_add, scatter_reduce,
take_along_dim, and aten index_put.

Repeated positions appear only where the result is defined (accumulating ops); non-contiguous
selves, 0-dim and empty tensors are covered; error samples give PyTorch's error types.
"""

from __future__ import annotations

import numpy as np
from opinfo import ALL, FLOATS, ErrorSample, OpInfo, Sample, T, layouts_of, make

SOME = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool")


def L(values, dtype=np.int64, layout="contiguous") -> T:
    return T(np.array(values, dtype), layout)


def _perm(n: int, k: int, rng) -> T:
    return L(rng.permutation(n)[:k])


def index_select_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, 0, L([3, 0, 3, 1])), name=f"{a} dim0"))
        out.append(Sample((a, 1, L([4, 0], np.int32)), name=f"{a} dim1 int32"))
    out.append(Sample((make((3, 4, 2), dtype, rng), -2, L([])), name="empty index"))
    out.append(Sample((make((3,), dtype, rng), 0, L(1)), name="0-dim index"))
    out.append(Sample((make((), dtype, rng), 0, L([0])), name="0-dim self"))
    return out


def index_select_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, 0, L([5]))), IndexError, "index out of range in self"),
        ErrorSample(Sample((x, 0, L([-1]))), IndexError, "index out of range"),
        ErrorSample(Sample((x, 0, L([1.0], np.float32))), RuntimeError, "int32 or int64"),
        ErrorSample(Sample((x, 0, L([[1]]))), IndexError, "vector"),
        ErrorSample(Sample((x, 2, L([1]))), IndexError, "Dimension out of range"),
    ]


def index_add_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, 0, L([3, 0, 3]), make((3, 5), dtype, rng)), name=f"{a} dim0 repeats"))
        out.append(Sample((a, 1, L([4, 4], np.int32), make((4, 2), dtype, rng)), name=f"{a} dim1 int32"))
    src = make((2, 5), dtype, rng)
    if dtype != "bool":
        alpha = 2 if dtype not in FLOATS else 0.5
        out.append(Sample((make((4, 5), dtype, rng), 0, L([1, 1]), src), {"alpha": alpha}, name="alpha"))
    out.append(Sample((make((4, 5), dtype, rng), 0, L([]), make((0, 5), dtype, rng)), name="empty"))
    # Rows of 16 or more accumulate in rounds of distinct rows; more than 64 repeats fall back to np.add.at.
    wide = make((6, 2, 10), dtype, rng)
    out.append(Sample((wide, 0, T(rng.integers(0, 6, 40)), make((40, 2, 10), dtype, rng)), name="wide rows repeated"))
    many = L([2] * 70 + [0, 5])
    out.append(Sample((wide, 0, many, make((72, 2, 10), dtype, rng, low=-1, high=2)), name="one row 70 times"))
    return out


def index_add_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, 0, L([0, 1]), T(np.ones((3, 4), np.float32)))), RuntimeError, "Number of indices"),
        ErrorSample(Sample((x, 0, L([0, 1]), T(np.ones((2, 4), np.float64)))), RuntimeError, "same scalar type"),
        ErrorSample(Sample((x, 0, L([0, 5]), T(np.ones((2, 4), np.float32)))), RuntimeError, "out of bounds"),
        ErrorSample(Sample((x, 0, L([0, 1.0], np.float32), T(np.ones((2, 4), np.float32)))), RuntimeError, "int32"),
        ErrorSample(Sample((x, 0, L([0, 1]), T(np.ones((2, 3), np.float32)))), RuntimeError, "source tensor shape"),
    ]


def index_copy_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, 0, L([3, 0]), make((2, 5), dtype, rng)), name=f"{a} dim0"))
        out.append(Sample((a, -1, L([4, 1, 2]), make((4, 3), dtype, rng)), name=f"{a} dim -1"))
    return out


def index_copy_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, 0, L([0, 1], np.int32), T(np.ones((2, 4), np.float32)))), RuntimeError, "long"),
        ErrorSample(Sample((x, 0, L([0, 7]), T(np.ones((2, 4), np.float32)))), IndexError, "out of bounds"),
        ErrorSample(Sample((x, 0, L([0, 1]), T(np.ones((3, 4), np.float32)))), IndexError, "Number of indices"),
        ErrorSample(Sample((x, 0, L([0, 1]), T(np.ones((2, 4), np.float64)))), RuntimeError, "same dtype"),
    ]


def index_fill_samples(dtype, rng):
    out = []
    value = True if dtype == "bool" else 3
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, 0, L([3, 0, 3]), value), name=f"{a} dim0"))
        out.append(Sample((a, 1, L([-1, 0]), value), name=f"{a} dim1 negative"))
    out.append(Sample((make((4, 5), dtype, rng), 1, L([2]), T(np.array(value).astype(np.float64))), name="0-dim value"))
    return out


def index_fill_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, 0, L([0], np.int32), 1.0)), IndexError, "int64"),
        ErrorSample(Sample((x, 0, L([7]), 1.0)), IndexError, "out of bounds"),
        ErrorSample(Sample((x, 0, L([0]), T(np.ones(2, np.float32)))), RuntimeError, "0-dimensional"),
        ErrorSample(Sample((x, 0, L([0]), 1.5j)), RuntimeError, "complex"),
    ]


def take_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, L([[0, 19], [-1, 7]])), name=f"{a}"))
    out.append(Sample((make((), dtype, rng), L([0, 0])), name="0-dim self"))
    out.append(Sample((make((3,), dtype, rng), L([], np.int64)), name="empty index"))
    return out


def take_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, L([20]))), IndexError, "out of range: tried to access index 20"),
        ErrorSample(Sample((x, L([2], np.int32))), RuntimeError, "long tensor"),
    ]


def put_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, L([0, 19, -1]), make((3,), dtype, rng)), {"accumulate": True}, name=f"{a} accumulate"))
        out.append(Sample((a, L([[3, 7]]), make((2,), dtype, rng)), name=f"{a}"))
    return out


def put_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, L([20]), T(np.ones(1, np.float32)))), IndexError, "out of range"),
        ErrorSample(Sample((x, L([1, 2]), T(np.ones(1, np.float32)))), IndexError, "same number of elements"),
        ErrorSample(Sample((x, L([1]), T(np.ones(1, np.float64)))), RuntimeError, "same dtype"),
        ErrorSample(Sample((x, L([1], np.int32), T(np.ones(1, np.float32)))), RuntimeError, "long tensor"),
    ]


def gather_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, 0, T(rng.integers(0, 4, (3, 5)))), name=f"{a} dim0"))
        out.append(Sample((a, 1, T(rng.integers(0, 5, (4, 7)), "transposed")), name=f"{a} dim1 transposed index"))
        out.append(Sample((a, 1, T(rng.integers(0, 5, (2, 3)).astype(np.int32))), name=f"{a} int32 index"))
    out.append(Sample((make((3, 4, 2), dtype, rng), -1, T(rng.integers(0, 2, (2, 2, 3)))), name="3d smaller"))
    out.append(Sample((make((), dtype, rng), 0, L(0)), name="0-dim"))
    out.append(Sample((make((3,), dtype, rng), 0, L([], np.int64)), name="empty index"))
    return out


def gather_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, 0, L([[0]], np.int16))), RuntimeError, "Expected dtype int32/int64 for index"),
        ErrorSample(Sample((x, 0, L([0, 1]))), RuntimeError, "same number of dimensions"),
        ErrorSample(Sample((x, 1, L([[5]]))), RuntimeError, "index 5 is out of bounds for dimension 1 with size 4"),
        ErrorSample(Sample((x, 0, L([[-1]]))), RuntimeError, "out of bounds"),
        ErrorSample(Sample((x, 0, T(np.zeros((2, 5), np.int64)))), RuntimeError, "Size does not match at dimension 1"),
    ]


def _unique_rows(rng, n, shape):
    """Index rows along dim 0 without repeats in a column, so that scatter's result is defined."""
    return T(np.stack([rng.permutation(n)[: shape[0]] for _ in range(shape[1])], axis=1).astype(np.int64))


def scatter_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, 0, _unique_rows(rng, 4, (3, 5)), make((3, 6), dtype, rng)), name=f"{a} dim0 src"))
        value = True if dtype == "bool" else -2
        out.append(Sample((a, 0, _unique_rows(rng, 4, (2, 3))), {"value": value}, name=f"{a} value"))
    out.append(Sample((make((), dtype, rng), 0, L(0), make((), dtype, rng)), name="0-dim"))
    return out


def scatter_reduce_legacy_samples(dtype, rng):
    out = []
    for reduce in ("add", "multiply"):
        for a in layouts_of((4, 5), dtype, rng, low=-3, high=3):
            index = T(rng.integers(0, 4, (3, 5)))
            out.append(Sample((a, 0, index, make((3, 5), dtype, rng, low=-3, high=3)), {"reduce": reduce}, name=reduce))
        value = True if dtype == "bool" else 2
        out.append(
            Sample((make((4, 5), dtype, rng), 1, T(rng.integers(0, 5, (4, 2)))), {"value": value, "reduce": reduce})
        )
    return out


def scatter_errors():
    x = T(np.ones((3, 4), np.float32))
    one = T(np.ones((2, 2), np.float32))
    return [
        ErrorSample(Sample((x, 0, L([[0]], np.int8), one)), RuntimeError, "Expected dtype int32/int64 for index"),
        ErrorSample(Sample((x, 0, L([[0, 1], [1, 0]]), T(np.ones((1, 1), np.float32)))), RuntimeError, "no larger"),
        ErrorSample(Sample((x, 0, L([[7]]), one)), RuntimeError, "index 7 is out of bounds"),
        ErrorSample(Sample((x, 0, L([[0]]), T(np.ones((2, 2), np.float64)))), RuntimeError, "dtype"),
        ErrorSample(Sample((x, 0, L([[0]]), one), {"reduce": "max"}), RuntimeError, "add or multiply"),
    ]


def scatter_add_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, 0, T(rng.integers(0, 4, (6, 5))), make((6, 5), dtype, rng)), name=f"{a} dim0 repeats"))
        out.append(Sample((a, 1, T(rng.integers(0, 5, (2, 9))), make((3, 9), dtype, rng)), name=f"{a} dim1"))
    return out


def scatter_reduce_samples(dtype, rng):
    out = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            a = make((4, 5), dtype, rng, low=-3, high=4)
            index = T(rng.integers(0, 4, (6, 5)))
            src = make((6, 5), dtype, rng, low=-3, high=4)
            out.append(
                Sample((a, 0, index, src, reduce), {"include_self": include_self}, name=f"{reduce} {include_self}")
            )
        a = make((4, 5), dtype, rng, layout="transposed", low=-3, high=4)
        out.append(Sample((a, 1, T(rng.integers(0, 5, (4, 3))), make((4, 3), dtype, rng), reduce), name=f"{reduce} t"))
    return out


def scatter_reduce_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, 0, L([[0]]), x, "foo")), RuntimeError, "reduce argument must be either sum"),
        ErrorSample(Sample((T(np.ones(2, np.bool_)), 0, L([0]), T(np.ones(2, np.bool_)), "mean")), NotImplementedError),
    ]


def take_along_dim_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        out.append(Sample((a, T(rng.integers(0, 4, (3, 5))), 0), name=f"{a} dim0"))
        out.append(Sample((a, T(rng.integers(0, 5, (1, 3))), 1), name=f"{a} broadcast"))
        out.append(Sample((a, T(rng.integers(-20, 20, (3,)))), name=f"{a} flat"))
    return out


def take_along_dim_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, L([[1]], np.int32), 1)), RuntimeError, "should be Long"),
        ErrorSample(Sample((x, L([1]), 1)), RuntimeError, "same number of dimensions"),
    ]


def index_put_samples(dtype, rng):
    out = []
    for a in layouts_of((4, 5), dtype, rng):
        rows = L([3, 0, 2])
        out.append(Sample((a, (rows,), make((3, 5), dtype, rng)), name=f"{a} rows"))
        out.append(Sample((a, (L([[2], [1]]), L([4, 1])), make((2, 1), dtype, rng)), name=f"{a} broadcast"))
        out.append(Sample((a, (L([1, 1, 3]), L([0, 0, 2])), make((3,), dtype, rng)), {"accumulate": True}, name="acc"))
        out.append(Sample((a, (L([1, 1, 3]),), make((5,), dtype, rng)), {"accumulate": True}, name=f"{a} acc rows"))
    mask = T(rng.integers(0, 2, (4, 5)).astype(np.bool_))
    out.append(Sample((make((4, 5), dtype, rng), (mask,), make((), dtype, rng)), name="mask 0-dim value"))
    wide = make((6, 20), dtype, rng, layout="transposed")
    rows = T(rng.integers(-6, 6, 30))
    out.append(Sample((wide, (rows,), make((30, 20), dtype, rng)), {"accumulate": True}, name="wide rows repeated"))
    return out


def index_put_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, (L([0]),), T(np.ones(4, np.float64)))), RuntimeError, "dtypes match"),
        ErrorSample(Sample((x, (L([5]),), T(np.ones(4, np.float32)))), IndexError, "index 5 is out of bounds"),
        ErrorSample(Sample((x, (L([0, 1]),), T(np.ones((3, 4), np.float32)))), RuntimeError, "shape mismatch"),
        ErrorSample(Sample((x, (L([0.5], np.float32),), T(np.ones(4, np.float32)))), IndexError, "long, int, byte"),
    ]


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _inplace(name):
    return lambda lib, self, *a, **k: getattr(self, name + "_")(*a, **k)


OPS = [
    OpInfo("index_select", _call("index_select"), ALL, index_select_samples, errors=index_select_errors, out=True),
    OpInfo(
        "index_add",
        _call("index_add"),
        SOME,
        index_add_samples,
        errors=index_add_errors,
        inplace=_inplace("index_add"),
        out=True,
    ),
    OpInfo(
        "index_copy",
        _call("index_copy"),
        ALL,
        index_copy_samples,
        errors=index_copy_errors,
        inplace=_inplace("index_copy"),
        out=True,
    ),
    OpInfo(
        "index_fill",
        _call("index_fill"),
        ALL,
        index_fill_samples,
        errors=index_fill_errors,
        inplace=_inplace("index_fill"),
    ),
    OpInfo("take", _call("take"), ALL, take_samples, errors=take_errors, out=True),
    OpInfo(
        "put", lambda lib, s, *a, **k: s.put(*a, **k), SOME, put_samples, errors=put_errors, inplace=_inplace("put")
    ),
    OpInfo("gather", _call("gather"), ALL, gather_samples, errors=gather_errors, out=True),
    OpInfo(
        "scatter", _call("scatter"), ALL, scatter_samples, errors=scatter_errors, inplace=_inplace("scatter"), out=True
    ),
    OpInfo("scatter_legacy_reduce", _call("scatter"), SOME, scatter_reduce_legacy_samples, inplace=_inplace("scatter")),
    OpInfo("scatter_add", _call("scatter_add"), SOME, scatter_add_samples, inplace=_inplace("scatter_add"), out=True),
    OpInfo(
        "scatter_reduce",
        _call("scatter_reduce"),
        SOME,
        scatter_reduce_samples,
        errors=scatter_reduce_errors,
        inplace=_inplace("scatter_reduce"),
        out=True,
        tolerances={"bfloat16": (3e-2, 3e-2), "float16": (2e-3, 2e-3)},
    ),
    OpInfo(
        "take_along_dim", _call("take_along_dim"), ALL, take_along_dim_samples, errors=take_along_dim_errors, out=True
    ),
    OpInfo(
        "index_put",
        _call("index_put"),
        SOME,
        index_put_samples,
        errors=index_put_errors,
        inplace=_inplace("index_put"),
    ),
]
