"""Samples for the normalization ops (``ember.core.aten.nn.normalization``) through
``torch.nn.functional``: layer_norm, rms_norm, group_norm, batch_norm (eval, and training with the
running statistics returned too, so that their in-place update is compared) and normalize."""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make

TOL = {"float16": (2e-3, 2e-3), "bfloat16": (3e-2, 3e-2)}


def _f(name: str):
    def call(lib, *args, **kwargs):
        return getattr(functional(lib), name)(*args, **kwargs)

    return call


def _layer_norm_samples(dtype, rng):
    out = []
    for shape, normalized in [((5,), (5,)), ((3, 4), (4,)), ((2, 3, 4), (3, 4)), ((0, 3), (3,)), ((3, 0), (0,))]:
        for t in layouts_of(shape, dtype, rng):
            out.append(Sample((t, normalized), name=f"{t} {normalized}"))
            w, b = make(normalized, dtype, rng), make(normalized, dtype, rng)
            out.append(Sample((t, normalized, w, b), {"eps": 1e-3}, name=f"{t} {normalized} weight bias"))
            out.append(Sample((t, list(normalized)), {"weight": w}, name=f"{t} {normalized} weight"))
    if dtype in ("float16", "bfloat16"):
        t = make((3, 4), dtype, rng)
        w = make((4,), "float32", rng)
        out.append(Sample((t, (4,), w, w), name="mixed: float32 weight and bias"))
    out.append(
        Sample(
            (T(np.array([[1.0, np.inf, 2.0], [np.nan, 0.0, 1.0]], make((1,), dtype, rng).array.dtype)), (3,)),
            name="special",
        )
    )
    return out


def _layer_norm_errors():
    x = T(np.ones((3, 4), np.float32))
    return [
        ErrorSample(Sample((x, (5,))), RuntimeError, "expected input with shape"),
        ErrorSample(Sample((x, ())), RuntimeError, "at least 1-dimensional"),
        ErrorSample(Sample((x, (4,), T(np.ones(3, np.float32)))), RuntimeError, "weight"),
        ErrorSample(Sample((x, (4,), T(np.ones(4, np.float64)))), RuntimeError, "mixed dtype"),
        ErrorSample(Sample((T(np.ones((2, 3), np.int64)), (3,))), NotImplementedError, "not implemented for 'Long'"),
    ]


def _rms_norm_samples(dtype, rng):
    out = []
    for shape, normalized in [((5,), (5,)), ((3, 4), (4,)), ((2, 3, 4), (3, 4)), ((0, 3), (3,))]:
        for t in layouts_of(shape, dtype, rng, low=-1, high=1):
            out.append(Sample((t, normalized), name=f"{t} {normalized}"))
            out.append(Sample((t, normalized, make(normalized, dtype, rng)), {"eps": 1e-3}, name=f"{t} weight eps"))
    tiny = T((make((2, 8), "float64", rng).array * 1e-4).astype(make((1,), dtype, rng).array.dtype))
    out.append(Sample((tiny, (8,)), name="tiny values: eps=None is the compute dtype's epsilon"))
    if dtype in ("float16", "bfloat16"):
        out.append(Sample((make((3, 4), dtype, rng), (4,), make((4,), "float32", rng)), name="float32 weight"))
    return out


def _rms_norm_errors():
    return [
        ErrorSample(Sample((T(np.ones((2, 3), np.int64)), (3,))), NotImplementedError, "not implemented for 'Long'"),
        ErrorSample(Sample((T(np.ones((2, 3), np.float32)), (4,))), RuntimeError, "expected input with shape"),
    ]


def _group_norm_samples(dtype, rng):
    out = []
    for shape, groups in [
        ((2, 4, 3), 2),
        ((2, 4), 2),
        ((3, 6, 2, 2), 3),
        ((2, 4, 3), 1),
        ((0, 4, 3), 2),
        ((2, 4, 0), 2),
    ]:
        for t in layouts_of(shape, dtype, rng):
            out.append(Sample((t, groups), name=f"{t} groups={groups}"))
            c = shape[1]
            w, b = make((c,), dtype, rng), make((c,), dtype, rng)
            out.append(Sample((t, groups, w, b), {"eps": 1e-3}, name=f"{t} groups={groups} weight bias"))
    return out


def _group_norm_errors():
    x = T(np.ones((2, 4, 3), np.float32))
    return [
        ErrorSample(Sample((x, 3)), RuntimeError, "divisible by num_groups"),
        ErrorSample(Sample((T(np.ones(4, np.float32)), 2)), RuntimeError, "at least 2 dimensions"),
        ErrorSample(Sample((x, 2, T(np.ones(3, np.float32)))), RuntimeError, "weight"),
        ErrorSample(Sample((T(np.ones((1, 4), np.float32)), 4)), ValueError, "more than 1 value per channel"),
        ErrorSample(Sample((T(np.ones((1, 4), np.float32)), 3)), ValueError, "more than 1 value per channel"),
        ErrorSample(Sample((T(np.ones((2, 4, 3), np.int64)), 2)), NotImplementedError, "not implemented"),
    ]


def _batch_norm_call(lib, x, running_mean, running_var, **kwargs):
    out = functional(lib).batch_norm(x, running_mean, running_var, **kwargs)
    return out, running_mean, running_var


def _batch_norm_samples(dtype, rng):
    out = []
    stat_dtype = "float32" if dtype in ("float16", "bfloat16") else dtype
    for shape in [(5, 3), (4, 3, 2), (2, 3, 2, 2), (0, 3)]:
        c = shape[1]
        for t in layouts_of(shape, dtype, rng):
            rm = make((c,), stat_dtype, rng, low=-1, high=1)
            rv = make((c,), stat_dtype, rng, low=0.5, high=2)
            w, b = make((c,), stat_dtype, rng), make((c,), stat_dtype, rng)
            out.append(Sample((t, rm, rv), name=f"{t} eval"))
            out.append(Sample((t, rm, rv), {"weight": w, "bias": b, "eps": 1e-3}, name=f"{t} eval weight bias"))
            if shape[0]:
                out.append(Sample((t, rm, rv), {"training": True}, name=f"{t} training"))
                out.append(Sample((t, rm, rv), {"training": True, "momentum": 0.3, "weight": w}, name=f"{t} momentum"))
                out.append(Sample((t, None, None), {"training": True, "bias": b}, name=f"{t} training no stats"))
    return out


def _batch_norm_errors():
    x = T(np.ones((5, 4), np.float32))
    stats = (T(np.zeros(4, np.float32)), T(np.ones(4, np.float32)))
    return [
        ErrorSample(Sample((x, None, None)), RuntimeError, "running_mean must be defined"),
        ErrorSample(Sample((x, T(np.zeros(3, np.float32)), T(np.ones(3, np.float32)))), RuntimeError, "3"),
        ErrorSample(Sample((T(np.ones((1, 4), np.float32)), *stats), {"training": True}), ValueError, "more than 1"),
        ErrorSample(Sample((x, *stats), {"training": True, "momentum": None}), TypeError, "momentum"),
        ErrorSample(Sample((x, *stats), {"weight": T(np.ones(4, np.float64))}), RuntimeError),
        ErrorSample(Sample((T(np.ones((5, 4), np.int64)), *stats)), NotImplementedError, "not implemented"),
    ]


def _normalize_samples(dtype, rng):
    out = []
    for shape in [(5,), (3, 4), (2, 3, 4), (0, 3)]:
        for t in layouts_of(shape, dtype, rng):
            out.append(Sample((t,), {"dim": -1}, name=f"{t} dim=-1"))
            if len(shape) > 1:
                out.append(Sample((t,), {}, name=f"{t}"))
                out.append(Sample((t,), {"p": 1.0, "dim": 0, "eps": 0.5}, name=f"{t} p=1"))
    np_dtype = make((1,), dtype, rng).array.dtype
    out.append(Sample((T(np.zeros((2, 3), np_dtype)),), name="zeros: eps"))
    return out


def _normalize_errors():
    return [
        ErrorSample(Sample((T(np.ones(3, np.float32)),)), IndexError, "Dimension out of range"),
        ErrorSample(Sample((T(np.ones((2, 3), np.int64)),)), RuntimeError, "floating point"),
    ]


OPS = [
    OpInfo("F.layer_norm", _f("layer_norm"), FLOATS, _layer_norm_samples, _layer_norm_errors, tolerances=TOL),
    OpInfo("F.rms_norm", _f("rms_norm"), FLOATS, _rms_norm_samples, _rms_norm_errors, tolerances=TOL),
    OpInfo("F.group_norm", _f("group_norm"), FLOATS, _group_norm_samples, _group_norm_errors, tolerances=TOL),
    OpInfo("F.batch_norm", _batch_norm_call, FLOATS, _batch_norm_samples, _batch_norm_errors, tolerances=TOL),
    OpInfo("F.normalize", _f("normalize"), FLOATS, _normalize_samples, _normalize_errors, tolerances=TOL),
]
