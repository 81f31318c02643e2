"""Samples for the losses (``ember.core.aten.nn.classification`` and ``losses``) through
``torch.nn.functional``: cross_entropy and nll_loss with class indices (1-d, 2-d and K-dimensional
inputs, weights, ignore_index, label smoothing, every reduction) and class probabilities; the
elementwise losses with broadcasting, weights and every reduction; kl_div and cosine_similarity."""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, ErrorSample, OpInfo, Sample, T, functional, layouts_of, make

REDUCTIONS = ("mean", "sum", "none")
TOL = {"float16": (3e-3, 3e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-5, 1e-5)}


def _f(name: str):
    def call(lib, *args, **kwargs):
        return getattr(functional(lib), name)(*args, **kwargs)

    return call


def _targets(rng, shape, classes, ignore=None):
    target = rng.integers(0, classes, size=shape)
    if ignore is not None and target.size:
        target.flat[:: max(1, target.size // 2)] = ignore
    return T(target.astype(np.int64))


def _class_samples(log_probabilities: bool):
    def samples(dtype, rng):
        out = []
        cases = [((3, 5), (3,)), ((5,), ()), ((2, 3, 4), (2, 4)), ((2, 3, 2, 2), (2, 2, 2)), ((0, 4), (0,))]
        for shape, target_shape in cases:
            classes = shape[0] if len(shape) == 1 else shape[1]
            for i, x in enumerate(layouts_of(shape, dtype, rng, low=-4, high=1 if log_probabilities else 4)):
                t = _targets(rng, target_shape, classes)
                weight = make((classes,), dtype, rng, low=0.5, high=2)
                # Every reduction on the contiguous input; the other layouts only change how x is read.
                for reduction in REDUCTIONS if i == 0 else ("none",):
                    out.append(Sample((x, t), {"reduction": reduction}, name=f"{x} {reduction}"))
                    out.append(
                        Sample((x, t), {"weight": weight, "reduction": reduction}, name=f"{x} weight {reduction}")
                    )
                ignored = _targets(rng, target_shape, classes, ignore=1)
                out.append(Sample((x, ignored), {"ignore_index": 1}, name=f"{x} ignore_index=1"))
                out.append(
                    Sample((x, ignored), {"ignore_index": 1, "weight": weight, "reduction": "none"}, name="ii w")
                )
                if not log_probabilities:
                    for reduction in REDUCTIONS if i == 0 else ("mean",):
                        smoothing = {"label_smoothing": 0.2, "ignore_index": 1, "reduction": reduction}
                        out.append(Sample((x, ignored), smoothing, name=f"{x} smoothing {reduction}"))
                        out.append(Sample((x, ignored), {**smoothing, "weight": weight}, name=f"{x} smoothing weight"))
        np_dtype = make((1,), dtype, rng).array.dtype
        # Logits beyond exp's range take the path that shifts by each row's maximum.
        big = T((rng.standard_normal((4, 5)) * 300).astype(np_dtype))
        special = T(np.array([[1.0, np.inf, 2.0], [-np.inf, -np.inf, 0.0], [np.nan, 1.0, 0.0]], np_dtype))
        for reduction in REDUCTIONS:
            out.append(
                Sample((big, T(np.array([0, 4, 2, 1]))), {"reduction": reduction}, name=f"large logits {reduction}")
            )
            out.append(
                Sample((special, T(np.array([0, 2, 1]))), {"reduction": reduction}, name=f"inf and nan {reduction}")
            )
        x = make((3, 4), dtype, rng)
        out.append(Sample((x, T(np.full(3, -100))), name="every target ignored: mean is NaN"))
        out.append(Sample((x, T(np.array([1, 0, 3], np.uint8))), name="uint8 target"))
        out.append(Sample((x, T(np.array([1, 0, 3]))), {"size_average": False}, name="legacy size_average"))
        return out

    return samples


def _probability_samples(dtype, rng):
    out = []
    for shape in [(3, 5), (5,), (2, 3, 4)]:
        classes = shape[0] if len(shape) == 1 else shape[1]
        for x in layouts_of(shape, dtype, rng, low=-4, high=4):
            t = make(shape, dtype, rng, low=0, high=1)
            for reduction in REDUCTIONS:
                out.append(Sample((x, t), {"reduction": reduction}, name=f"probs {x} {reduction}"))
            w = make((classes,), dtype, rng, low=0.5, high=2)
            out.append(Sample((x, t), {"weight": w, "label_smoothing": 0.3}, name=f"probs {x} weight smoothing"))
            out.append(Sample((x, t), {"reduction": "none", "label_smoothing": 0.3}, name=f"probs {x} smoothing none"))
    if dtype == "float32":
        out.append(
            Sample((make((3, 5), dtype, rng), make((3, 5), "float64", rng, low=0, high=1)), name="float64 target")
        )
    return out


def _class_errors(name: str):
    def errors():
        x = T(np.zeros((3, 5), np.float32))
        out = [
            ErrorSample(Sample((x, T(np.array([1, 2, 3], np.int32)))), RuntimeError, "Long or Byte"),
            ErrorSample(Sample((x, T(np.array([1, 2, 5])))), IndexError, "out of bounds"),
            ErrorSample(Sample((x, T(np.array([1, 2, -3])))), IndexError, "out of bounds"),
            ErrorSample(Sample((x, T(np.array([1, 2])))), ValueError, "batch_size"),
            ErrorSample(
                Sample((x, T(np.array([1, 2, 3]))), {"weight": T(np.ones(4, np.float32))}), RuntimeError, "weight"
            ),
            ErrorSample(Sample((x, T(np.array([1, 2, 3]))), {"weight": T(np.ones(5))}), RuntimeError, "scalar type"),
            ErrorSample(Sample((x, T(np.array([1, 2, 3]))), {"reduction": "avg"}), ValueError, "not a valid value"),
            ErrorSample(
                Sample((T(np.zeros((2, 3, 4), np.float32)), T(np.zeros((2, 5), np.int64)))), RuntimeError, "target size"
            ),
        ]
        if name == "cross_entropy":
            out += [
                ErrorSample(
                    Sample((x, T(np.array([1, 2, 3]))), {"label_smoothing": 1.5}), RuntimeError, "label_smoothing"
                ),
                ErrorSample(Sample((x, T(np.ones((3, 5), np.int64)))), RuntimeError, "floating point type for target"),
                ErrorSample(
                    Sample((T(np.ones((3, 5), np.int64)), T(np.array([1, 2, 3])))), NotImplementedError, "Long"
                ),
            ]
        return out

    return errors


def _pair_samples(low=-4, high=4, target_low=None, target_high=None, extra=lambda dtype, rng: []):
    def samples(dtype, rng):
        out = []
        for shape in [(), (5,), (3, 4), (2, 3, 4), (0, 3)]:
            for x in layouts_of(shape, dtype, rng, low=low, high=high):
                t = make(shape, dtype, rng, low=target_low if target_low is not None else low, high=target_high or high)
                for reduction in REDUCTIONS:
                    out.append(Sample((x, t), {"reduction": reduction}, name=f"{x} {reduction}"))
                    if reduction == "none":
                        out.append(Sample((t, x), {"reduction": reduction}, name=f"swapped {x} {reduction}"))
        return out + extra(dtype, rng)

    return samples


def _broadcast_extra(dtype, rng):
    x, t = make((3, 1), dtype, rng), make((4,), dtype, rng)
    w = make((3, 4), dtype, rng, low=0, high=2)
    out = [Sample((x, t), {"reduction": r}, name=f"broadcast {r}") for r in REDUCTIONS]
    y = make((3, 4), dtype, rng)
    out += [
        Sample((y, make((3, 4), dtype, rng)), {"weight": w, "reduction": r}, name=f"weight {r}") for r in REDUCTIONS
    ]
    out.append(Sample((y, y), {"reduce": False}, name="legacy reduce=False"))
    return out


def _smooth_extra(dtype, rng):
    x, t = make((3, 4), dtype, rng), make((3, 4), dtype, rng)
    return [Sample((x, t), {"beta": b, "reduction": "none"}, name=f"beta={b}") for b in (0.0, 0.5, 3.0)]


def _bce_extra(dtype, rng):
    np_dtype = make((1,), dtype, rng).array.dtype
    x = T(np.array([0.0, 1.0, 0.5, 1.0, 0.0], np_dtype))
    t = T(np.array([1.0, 0.0, 0.5, 1.0, 0.0], np_dtype))
    out = [Sample((x, t), {"reduction": r}, name=f"log clamped at -100 {r}") for r in REDUCTIONS]
    y, z = make((3, 4), dtype, rng, low=0, high=1), make((3, 4), dtype, rng, low=0, high=1)
    out += [Sample((y, z), {"weight": make((4,), dtype, rng), "reduction": r}, name=f"weight {r}") for r in REDUCTIONS]
    return out


def _bce_logits_extra(dtype, rng):
    x, t = make((3, 4), dtype, rng, low=-30, high=30), make((3, 4), dtype, rng, low=0, high=1)
    out = []
    for r in REDUCTIONS:
        out.append(
            Sample((x, t), {"pos_weight": make((4,), dtype, rng, low=0, high=3), "reduction": r}, name=f"pw {r}")
        )
        out.append(Sample((x, t), {"weight": make((3, 1), dtype, rng, low=0, high=3), "reduction": r}, name=f"w {r}"))
    if dtype == "float32":
        out.append(Sample((x, make((3, 4), "float64", rng, low=0, high=1)), name="float64 target"))
    return out


def _kl_extra(dtype, rng):
    x, t = make((3, 4), dtype, rng, low=-3, high=0), make((3, 4), dtype, rng, low=0, high=1)
    np_dtype = make((1,), dtype, rng).array.dtype
    zeros = T(np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]], np_dtype))
    out = [Sample((x, t), {"reduction": "batchmean"}, name="batchmean")]
    out += [
        Sample((x, t), {"reduction": r, "log_target": True}, name=f"log_target {r}") for r in (*REDUCTIONS, "batchmean")
    ]
    out.append(Sample((make((2, 3), dtype, rng, low=-3, high=0), zeros), {"reduction": "none"}, name="zero targets"))
    out.append(
        Sample(
            (make((), dtype, rng), make((), dtype, rng, low=0, high=1)),
            {"reduction": "batchmean"},
            name="0-dim batchmean",
        )
    )
    return out


def _pair_errors(name, extra=()):
    def errors():
        f = T(np.ones((2, 3), np.float32))
        return [ErrorSample(Sample((f, f), {"reduction": "avg"}), ValueError, "not a valid value"), *extra]

    return errors


INT_PAIR = (T(np.ones(3, np.int64)), T(np.ones(3, np.int64)))
F32 = T(np.full((2, 3), 0.5, np.float32))


def _cosine_samples(dtype, rng):
    out = []
    for shape, dim in [((3, 4), 1), ((3, 4), 0), ((5,), 0), ((2, 3, 4), -1), ((0, 3), 1), ((3, 4), -2)]:
        for x in layouts_of(shape, dtype, rng):
            out.append(Sample((x, make(shape, dtype, rng)), {"dim": dim}, name=f"{x} dim={dim}"))
    np_dtype = make((1,), dtype, rng).array.dtype
    out.append(Sample((T(np.zeros((2, 3), np_dtype)), make((2, 3), dtype, rng)), name="zero vector"))
    out.append(Sample((make((2, 3), dtype, rng), make((3,), dtype, rng)), {"eps": 1e-3}, name="broadcast"))
    out.append(Sample((T(np.arange(6).reshape(2, 3)), make((2, 3), dtype, rng)), name="integer x1"))
    return out


def _cosine_errors():
    return [
        ErrorSample(Sample(INT_PAIR[:1] * 2, {"dim": 0}), RuntimeError, "floating point"),
        ErrorSample(
            Sample((T(np.ones(3, np.float32)), T(np.ones(3, np.float32)))), IndexError, "Dimension out of range"
        ),
        ErrorSample(Sample((T(np.ones((2, 3), np.float32)), T(np.ones((2, 4), np.float32)))), RuntimeError, "size"),
    ]


OPS = [
    OpInfo(
        "F.cross_entropy",
        _f("cross_entropy"),
        FLOATS,
        _class_samples(False),
        _class_errors("cross_entropy"),
        tolerances=TOL,
    ),
    OpInfo("F.cross_entropy probabilities", _f("cross_entropy"), FLOATS, _probability_samples, tolerances=TOL),
    OpInfo("F.nll_loss", _f("nll_loss"), FLOATS, _class_samples(True), _class_errors("nll_loss"), tolerances=TOL),
    OpInfo(
        "F.mse_loss",
        _f("mse_loss"),
        FLOATS,
        _pair_samples(extra=_broadcast_extra),
        _pair_errors("mse", [ErrorSample(Sample(INT_PAIR), NotImplementedError, "not implemented for 'Long'")]),
        tolerances=TOL,
    ),
    OpInfo(
        "F.l1_loss",
        _f("l1_loss"),
        (*FLOATS, "int64"),
        _pair_samples(extra=_broadcast_extra),
        _pair_errors("l1"),
        tolerances=TOL,
    ),
    OpInfo(
        "F.smooth_l1_loss",
        _f("smooth_l1_loss"),
        FLOATS,
        _pair_samples(extra=_smooth_extra),
        _pair_errors(
            "smooth_l1", [ErrorSample(Sample((F32, F32), {"beta": -1.0}), RuntimeError, "negative values for beta")]
        ),
        tolerances=TOL,
    ),
    OpInfo(
        "F.binary_cross_entropy",
        _f("binary_cross_entropy"),
        FLOATS,
        _pair_samples(low=0, high=1, extra=_bce_extra),
        _pair_errors(
            "bce",
            [
                ErrorSample(
                    Sample((T(np.array([1.5], np.float32)), T(np.array([1.0], np.float32)))),
                    RuntimeError,
                    "between 0 and 1",
                ),
                ErrorSample(Sample((F32, T(np.ones((2, 3, 1), np.float32)))), ValueError, "target size"),
                ErrorSample(Sample((F32, T(np.ones((2, 3))))), RuntimeError, "dtype"),
                ErrorSample(Sample(INT_PAIR), NotImplementedError, "not implemented"),
            ],
        ),
        tolerances=TOL,
    ),
    OpInfo(
        "F.binary_cross_entropy_with_logits",
        _f("binary_cross_entropy_with_logits"),
        FLOATS,
        _pair_samples(target_low=0, target_high=1, extra=_bce_logits_extra),
        _pair_errors(
            "bce_logits",
            [
                ErrorSample(
                    Sample((F32, T(np.ones((2, 3, 1), np.float32)))), ValueError, "must be the same as input size"
                ),
                ErrorSample(Sample((F32, F32), {"pos_weight": T(np.ones(2, np.float32))}), RuntimeError),
                ErrorSample(Sample(INT_PAIR), NotImplementedError, "not implemented"),
            ],
        ),
        tolerances=TOL,
    ),
    OpInfo(
        "F.kl_div",
        _f("kl_div"),
        FLOATS,
        _pair_samples(low=-3, high=0, target_low=0, target_high=1, extra=_kl_extra),
        _pair_errors("kl", [ErrorSample(Sample(INT_PAIR, {"reduction": "sum"}), RuntimeError, "Integral inputs")]),
        tolerances=TOL,
    ),
    OpInfo("F.cosine_similarity", _f("cosine_similarity"), FLOATS, _cosine_samples, _cosine_errors, tolerances=TOL),
]
