"""Samples for sorting and selection (``ember.core.aten.sorting.sorting``) and for ``searchsorted`` and
``bucketize`` (``ember.core.aten.sorting.bucketization``).

Each op runs over 0-dim, 1-d, 2-d, 3-d and empty shapes in every layout, in two kinds of input:
distinct values, where every result index is defined, and small integers full of ties (plus NaN and
infinities for floats), where only some are. On ties we compare indices exactly where PyTorch defines
them (a stable sort, ``mode``, ``median`` of a row with NaN), and elsewhere only the values and that
each returned index points at its value.
"""

from __future__ import annotations

import numpy as np
from opinfo import ALL_REAL, FLOATS, INTS, NP_DTYPES, ErrorSample, OpInfo, Sample, T, layouts_of

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0, 3), (3, 0, 2)]
REAL_NO_BOOL = (*FLOATS, *INTS)


def _distinct(shape: tuple, dtype: str, rng, layout: str) -> T:
    n = int(np.prod(shape)) if shape else 1
    values = rng.permutation(n).reshape(shape) - (0 if dtype == "uint8" else n // 2)
    return T(np.asarray(values).astype(NP_DTYPES[dtype]), layout)


def _special(dtype: str) -> list[T]:
    if dtype not in FLOATS:
        return []
    base = np.array([[1.0, np.nan, 3.0, np.nan, 3.0], [4.0, 4.0, -np.inf, 2.0, np.nan], [np.inf, 0.0, -0.0, 5.0, 0.0]])
    ties = np.array([[2.0, 7.0, 7.0, 1.0, 2.0], [3.0, 3.0, 3.0, 3.0, 3.0]])
    allnan = np.full((2, 3), np.nan)
    np_dtype = NP_DTYPES[dtype]
    return [
        T(base.astype(np_dtype)),
        T(base.astype(np_dtype), "transposed"),
        T(ties.astype(np_dtype)),
        T(allnan.astype(np_dtype)),
    ]


def _inputs(dtype: str, rng) -> list[tuple[T, bool]]:
    """(tensor spec, whether its values are distinct)."""
    out = []
    for shape in SHAPES:
        for t in layouts_of(shape, dtype, rng, low=-3, high=3):
            out.append((t, False))
        if dtype != "bool" and t.layout != "expanded":
            for layout in ("contiguous", "transposed") if len(shape) >= 2 else ("contiguous",):
                out.append((_distinct(shape, dtype, rng, layout), True))
    return out + [(t, False) for t in _special(dtype)]


def _dims(ndim: int) -> list[int]:
    return [0, -1] + ([1] if ndim >= 2 else []) if ndim else [0, -1]


def sort_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for t, distinct in _inputs(dtype, rng):
        for dim in _dims(t.array.ndim):
            for descending in (False, True):
                out.append(
                    Sample((t,), {"dim": dim, "descending": descending, "stable": True}, f"{t} {dim} {descending}")
                )
                out.append(Sample((t,), {"dim": dim, "descending": descending, "_indices": distinct}, f"{t} unstable"))
    return out


def _sort(lib, x, _indices=True, **kwargs):
    values, indices = lib.sort(x, **kwargs)
    return (values, indices) if _indices else (values, _points_at(x, values, indices, kwargs.get("dim", -1)))


def _points_at(x, values, indices, dim) -> bool:
    """Whether each index picks its value out of ``x`` along ``dim`` (results with ties)."""
    if x.device.type == "meta" or getattr(x, "fake_mode", None) is not None:
        return True  # no values to check (a meta tensor, or a fake one being traced)  # no values to check (a meta tensor, or a fake one being traced)
    source, picked, where = (np.asarray(v.float() if v.is_floating_point() else v) for v in (x, values, indices))
    if source.ndim == 0:
        return bool(np.all(where == 0)) and np.array_equal(source, picked, equal_nan=True)
    if picked.ndim < source.ndim:
        picked, where = np.expand_dims(picked, dim), np.expand_dims(where, dim)
    return np.array_equal(np.take_along_axis(source, where, dim), picked, equal_nan=True)


def argsort_samples(dtype: str, rng) -> list[Sample]:
    return [
        Sample(s.args, {k: v for k, v in s.kwargs.items() if k != "_indices"})
        for s in sort_samples(dtype, rng)
        if s.kwargs.get("stable")
    ]


def topk_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for t, distinct in _inputs(dtype, rng):
        for dim in _dims(t.array.ndim):
            n = t.array.shape[dim] if t.array.ndim else 1
            for k in sorted({0, 1, n // 2, n}):
                for largest in (True, False):
                    out.append(Sample((t,), {"k": k, "dim": dim, "largest": largest, "_indices": distinct}, f"{t} {k}"))
                out.append(Sample((t,), {"k": k, "dim": dim, "sorted": False}, f"{t} {k} unsorted"))
    big = T(
        rng.permutation(200).astype(NP_DTYPES[dtype])
        if dtype in ("float32", "float64", "int64", "int32", "int16")
        else np.arange(60).astype(NP_DTYPES[dtype])
    )
    out += [
        Sample((big,), {"k": 3, "largest": largest, "_indices": True}, f"big {largest}") for largest in (True, False)
    ]
    return out


def _selection(name: str):
    def call(lib, x, *args, _indices=True, **kwargs):
        values, indices = getattr(lib, name)(x, *args, **kwargs)
        if _indices:
            return values, indices
        return values, _points_at(x, values, indices, kwargs.get("dim", -1))

    return call


def _topk(lib, x, _indices=True, **kwargs):
    values, indices = lib.topk(x, **kwargs)
    dim = kwargs.get("dim", -1)
    if not kwargs.get("sorted", True):
        # Any order is allowed: compare the values sorted, and that each index points at its value.
        return lib.sort(values, dim=dim, stable=True).values, _points_at(x, values, indices, dim)
    return (values, indices) if _indices else (values, _points_at(x, values, indices, dim))


def kthvalue_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for t, distinct in _inputs(dtype, rng):
        for dim in _dims(t.array.ndim):
            n = t.array.shape[dim] if t.array.ndim else 1
            for k in sorted({1, max(1, (n + 1) // 2), max(n, 1)}):
                out.append(Sample((t,), {"k": k, "dim": dim, "keepdim": k == 1, "_indices": distinct}, f"{t} {k}"))
    return out


def reduce_samples(defined_indices: bool, skip_expanded: bool = False, with_nan: bool = True):
    def samples(dtype: str, rng) -> list[Sample]:
        out = []
        for t, distinct in _inputs(dtype, rng):
            if not with_nan and dtype in FLOATS and np.isnan(t.array.astype(np.float32)).any():
                continue
            if skip_expanded and t.layout == "expanded":
                continue  # PyTorch 2.13 reads garbage along a stride-0 dim (test_sorting checks ours)
            for dim in _dims(t.array.ndim):
                for keepdim in (False, True):
                    out.append(Sample((t,), {"dim": dim, "keepdim": keepdim, "_indices": distinct or defined_indices}))
        return out

    return samples


def global_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((t,)) for t, _ in _inputs(dtype, rng)]


def _median_dim(name: str, nan_rows_defined: bool):
    """``median`` defines the index of a row with NaN (its first NaN); the other ties are open."""

    def call(lib, x, _indices=True, **kwargs):
        values, indices = getattr(lib, name)(x, **kwargs)
        if _indices:
            return values, indices
        return values, _points_at(x, values, indices, kwargs["dim"])

    return call


# -- searchsorted and bucketize ------------------------------------------------------------------------


def _sorted(shape: tuple, dtype: str, rng, layout="contiguous", low=-9, high=9) -> T:
    if dtype == "uint8":
        low = 0
    array = np.sort(rng.integers(low, high, size=shape), axis=-1).astype(NP_DTYPES[dtype])
    return T(array, layout)


def _values(shape: tuple, dtype: str, rng, layout="contiguous") -> T:
    if dtype in FLOATS:
        array = (rng.integers(-20, 20, size=shape) / 2).astype(NP_DTYPES[dtype])
    else:
        array = rng.integers(0 if dtype == "uint8" else -10, 10, size=shape).astype(NP_DTYPES[dtype])
    return T(array, layout)


def searchsorted_samples(dtype: str, rng) -> list[Sample]:
    out = []
    pairs = [
        ((6,), (4,)),
        ((6,), ()),
        ((6,), (3, 5)),
        ((2, 3, 7), (2, 3, 4)),
        ((4, 6), (4, 2)),
        ((0,), (3,)),
        ((6,), (0,)),
        ((2, 0), (2, 3)),
    ]
    for b_shape, v_shape in pairs:
        for v_layout in ("contiguous", "transposed") if len(v_shape) >= 2 else ("contiguous",):
            b, v = _sorted(b_shape, dtype, rng), _values(v_shape, dtype, rng, v_layout)
            for flags in ({}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}):
                out.append(Sample((b, v), flags, f"{b} {v} {flags}"))
    b = _sorted((7,), dtype, rng)
    out.append(Sample((b, 2), {}, "scalar int"))
    out.append(Sample((b, 2), {"right": True}, "scalar int right"))
    if dtype in FLOATS:
        out.append(Sample((b, 1.5), {}, "scalar float"))
        nan = np.array([1.0, 2.0, np.nan, 3.0, np.nan], NP_DTYPES[dtype])
        probe = np.array([0.0, 2.0, 2.5, np.nan, 9.0, -np.inf], NP_DTYPES[dtype])
        for right in (False, True):
            out.append(Sample((T(nan), T(probe)), {"right": right}, "nan boundaries"))
            out.append(Sample((T(np.sort(nan)), T(probe)), {"right": right}, "nan last"))
            clean = np.array([-1.0, 0.0, 2.0, 2.0, 9.0], NP_DTYPES[dtype])
            out.append(Sample((T(clean), T(probe)), {"right": right}, "nan values"))
    # sorter: the boundaries unsorted, with the order that sorts them.
    raw = _values((2, 6), dtype, rng).array
    sorter = np.argsort(raw.astype(np.float64), axis=-1, kind="stable")
    for right in (False, True):
        out.append(Sample((T(raw), _values((2, 3), dtype, rng)), {"sorter": T(sorter), "right": right}, "sorter nd"))
        out.append(
            Sample((T(raw[0]), _values((5,), dtype, rng)), {"sorter": T(sorter[0]), "right": right}, "sorter 1d")
        )
    # mixed dtypes promote
    out.append(Sample((b, T(np.array([1.5, -2.5, 30.0], np.float64))), {}, "promoted"))
    return out


def bucketize_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for v_shape in [(), (4,), (3, 5), (2, 3, 4), (0, 2)]:
        for layout in ("contiguous", "transposed") if len(v_shape) >= 2 else ("contiguous",):
            v = _values(v_shape, dtype, rng, layout)
            b = _sorted((6,), dtype, rng)
            for flags in ({}, {"right": True}, {"out_int32": True}):
                out.append(Sample((v, b), flags))
    return out


def bucketize_scalar_samples(dtype: str, rng) -> list[Sample]:
    return [Sample((3, _sorted((6,), dtype, rng)), flags) for flags in ({}, {"right": True}, {"out_int32": True})]


F = T(np.arange(6, dtype=np.float32).reshape(2, 3))
B = T(np.array([1.0, 2.0, 3.0], np.float32))


def _sort_errors():
    return [
        ErrorSample(Sample((F,), {"dim": 2}), IndexError, "Dimension out of range"),
        ErrorSample(Sample((T(np.array([1j], np.complex64)),)), RuntimeError, "complex"),
        ErrorSample(Sample((F,), {"dim": 1.5}), TypeError),
        ErrorSample(Sample((F,), {"descending": 1}), TypeError),
    ]


def _topk_errors():
    return [
        ErrorSample(Sample((F,), {"k": 4}), RuntimeError, "out of range"),
        ErrorSample(Sample((F,), {"k": -1}), RuntimeError, "out of range"),
        ErrorSample(Sample((F,), {"k": 1, "dim": 2}), IndexError, "Dimension out of range"),
        ErrorSample(Sample((T(np.array([1j], np.complex64)),), {"k": 1}), RuntimeError, "complex"),
        ErrorSample(Sample((T(np.array([True])),), {"k": 1}), RuntimeError, "bool"),
    ]


def _kthvalue_errors():
    return [
        ErrorSample(Sample((F,), {"k": 4}), RuntimeError, "out of range"),
        ErrorSample(Sample((F,), {"k": 0}), RuntimeError, "out of range"),
        ErrorSample(Sample((T(np.array([True])),), {"k": 1}), NotImplementedError, "Bool"),
        ErrorSample(Sample((T(np.zeros((2, 0), np.float32)),), {"k": 1, "dim": 1}), IndexError, "non-zero size"),
    ]


def _median_errors(name: str):
    def errors():
        return [
            ErrorSample(Sample((T(np.array([True])),)), NotImplementedError, "Bool"),
            ErrorSample(Sample((T(np.array([1j], np.complex64)),)), NotImplementedError, "ComplexFloat"),
            ErrorSample(Sample((F,), {"dim": 3}), IndexError, "Dimension out of range"),
            ErrorSample(Sample((T(np.zeros((2, 0), np.float32)),), {"dim": 1}), IndexError, "non-zero size"),
        ]

    return errors


def _mode_errors():
    return [
        ErrorSample(Sample((T(np.array([1j], np.complex64)),)), NotImplementedError, "ComplexFloat"),
        ErrorSample(Sample((T(np.zeros(0, np.float32)),)), IndexError, "non-zero size"),
        ErrorSample(Sample((F,), {"dim": 2}), IndexError, "Dimension out of range"),
    ]


def _searchsorted_errors():
    long = lambda a: T(np.array(a, np.int64))  # noqa: E731
    return [
        ErrorSample(Sample((B, F), {"side": "left", "right": True}), RuntimeError, "opposites"),
        ErrorSample(Sample((B, F), {"side": "mid"}), RuntimeError, "side can only be"),
        ErrorSample(Sample((T(np.zeros((3, 4), np.float32)), F)), RuntimeError, "first N-1 dimensions"),
        ErrorSample(Sample((B, F), {"sorter": long([0, 1])}), RuntimeError, "same size"),
        ErrorSample(Sample((B, F), {"sorter": T(np.array([0, 1, 2], np.int32))}), RuntimeError, "long dtype"),
        ErrorSample(Sample((B, F), {"sorter": long([0, 1, 5])}), RuntimeError, "out of range"),
        ErrorSample(Sample((T(np.array([True])), T(np.array([True])))), NotImplementedError, "Bool"),
        ErrorSample(Sample((T(np.array(1.0, np.float32)), T(np.array(1.0, np.float32)))), RuntimeError, "scalar"),
        ErrorSample(Sample((T(np.zeros((2, 3), np.float32)), 1.0)), RuntimeError, "scalar only"),
        ErrorSample(Sample((B, "a")), TypeError),
    ]


def _bucketize_errors():
    return [
        ErrorSample(Sample((F, T(np.zeros((2, 2), np.float32)))), RuntimeError, "1 dimension"),
        ErrorSample(Sample((F, T(np.array(1.0, np.float32)))), RuntimeError, "1 dimension"),
        ErrorSample(Sample((T(np.array([1j], np.complex64)), T(np.array([1j], np.complex64)))), NotImplementedError),
    ]


def _searchsorted(lib, sequence, values, **kwargs):
    return lib.searchsorted(sequence, values, **kwargs)


OPS = [
    OpInfo("sort", _sort, ALL_REAL, sort_samples, errors=_sort_errors),
    OpInfo("sort_method", lambda lib, x, **k: x.sort(**k), ("float32", "int64"), argsort_samples),
    OpInfo("argsort", lambda lib, x, **k: lib.argsort(x, **k), ALL_REAL, argsort_samples, out=True),
    OpInfo(
        "msort",
        lambda lib, x, **k: lib.msort(x, **k),
        ALL_REAL,
        lambda d, r: [Sample((t,)) for t, _ in _inputs(d, r)],
        out=True,
    ),
    OpInfo("topk", _topk, REAL_NO_BOOL, topk_samples, errors=_topk_errors),
    OpInfo("kthvalue", _selection("kthvalue"), REAL_NO_BOOL, kthvalue_samples, errors=_kthvalue_errors),
    OpInfo(
        "median",
        lambda lib, x, **k: lib.median(x, **k),
        REAL_NO_BOOL,
        global_samples,
        errors=_median_errors("median"),
        out=True,
    ),
    OpInfo(
        "nanmedian",
        lambda lib, x, **k: lib.nanmedian(x, **k),
        REAL_NO_BOOL,
        global_samples,
        out=True,
        errors=_median_errors("nanmedian"),
    ),
    OpInfo("median_dim", _median_dim("median", True), REAL_NO_BOOL, reduce_samples(False, True)),
    OpInfo("nanmedian_dim", _median_dim("nanmedian", False), REAL_NO_BOOL, reduce_samples(False, True)),
    # Not with NaN: PyTorch's mode sorts with a comparison that NaN breaks, and its answer is arbitrary.
    OpInfo("mode", _selection("mode"), ALL_REAL, reduce_samples(True, with_nan=False), errors=_mode_errors),
    OpInfo("searchsorted", _searchsorted, REAL_NO_BOOL, searchsorted_samples, errors=_searchsorted_errors, out=True),
    OpInfo(
        "bucketize",
        lambda lib, v, b, **k: lib.bucketize(v, b, **k),
        REAL_NO_BOOL,
        bucketize_samples,
        errors=_bucketize_errors,
        out=True,
    ),
    OpInfo("bucketize_scalar", lambda lib, v, b, **k: lib.bucketize(v, b, **k), REAL_NO_BOOL, bucketize_scalar_samples),
]
