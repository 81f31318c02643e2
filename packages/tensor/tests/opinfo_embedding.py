"""Samples for embedding (plain lookups, ``padding_idx``, ``max_norm``'s in-place renorm, whose
rescaled weight is compared too) and one_hot (given and inferred ``num_classes``)."""

from __future__ import annotations

import numpy as np
from opinfo import FLOATS, ErrorSample, OpInfo, Sample, T, functional, make

IDX = [np.array([1, 0, 4, 4]), np.array([[2, 3], [0, 4], [1, 1]]), np.array(3), np.zeros((0, 2), np.int64)]


def _embedding(lib, indices, weight, **kwargs):
    return functional(lib).embedding(indices, weight, **kwargs)


def _embedding_renorm(lib, indices, weight, **kwargs):
    out = functional(lib).embedding(indices, weight, **kwargs)
    return out, weight


def _embedding_samples(dtype, rng):
    out = []
    for layout in ("contiguous", "transposed", "sliced"):
        weight = make((5, 3), dtype, rng, layout=layout)
        for idx in IDX:
            for idx_dtype in (np.int64, np.int32):
                out.append(
                    Sample((T(idx.astype(idx_dtype)), weight), name=f"{idx.shape} {idx_dtype.__name__} {weight}")
                )
        out.append(Sample((T(IDX[1]), weight), {"padding_idx": 2}, name="padding_idx=2"))
        out.append(Sample((T(IDX[1]), weight), {"padding_idx": -1}, name="padding_idx=-1"))
    out.append(Sample((T(IDX[0]), make((5, 3), "int64", rng)), name="integer weight"))
    return out


def _renorm_samples(dtype, rng):
    out = []
    for idx in IDX[:3]:
        weight = make((5, 3), dtype, rng)
        out.append(Sample((T(idx), weight), {"max_norm": 1.0}, name=f"{idx.shape} max_norm=1"))
        out.append(Sample((T(idx.astype(np.int32)), weight), {"max_norm": 2.5, "norm_type": 1.0}, name="p=1"))
        out.append(Sample((T(idx), weight), {"max_norm": 3.0, "norm_type": float("inf")}, name="p=inf"))
        out.append(Sample((T(idx), weight), {"max_norm": 100.0}, name="max_norm above every norm"))
    return out


def _embedding_errors():
    w = T(np.ones((5, 3), np.float32))
    return [
        ErrorSample(Sample((T(np.array([1.0])), w)), RuntimeError, "indices"),
        ErrorSample(Sample((T(np.array([1], np.int16)), w)), RuntimeError, "Long, Int"),
        ErrorSample(Sample((T(np.array([5])), w)), IndexError, "index out of range"),
        ErrorSample(Sample((T(np.array([-1])), w)), IndexError, "index out of range"),
        ErrorSample(Sample((T(np.array([1])), T(np.ones(5, np.float32)))), RuntimeError, "2-D"),
        ErrorSample(Sample((T(np.array([1])), w), {"padding_idx": 7}), AssertionError, "Padding_idx"),
        ErrorSample(Sample((T(np.array([1])), w), {"padding_idx": -7}), AssertionError, "Padding_idx"),
    ]


def _one_hot(lib, x, *args, **kwargs):
    return functional(lib).one_hot(x, *args, **kwargs)


def _one_hot_samples(dtype, rng):
    out = []
    for shape in [(), (4,), (2, 3), (0,)]:
        for layout in ("contiguous", "transposed") if len(shape) >= 2 else ("contiguous",):
            t = make(shape, "int64", rng, low=0, high=4, layout=layout)
            out.append(Sample((t, 5), name=f"{t} num_classes=5"))
            out.append(Sample((t,), {"num_classes": 4}, name=f"{t} num_classes=4"))
    return out


def _one_hot_infer_samples(dtype, rng):
    return [
        Sample((make(shape, "int64", rng, low=0, high=6),), name=f"{shape} inferred") for shape in [(), (4,), (2, 3)]
    ]


def _one_hot_errors():
    x = T(np.array([0, 2]))
    return [
        ErrorSample(Sample((T(np.array([-1, 2])),)), RuntimeError, "non-negative"),
        ErrorSample(Sample((x, 2)), RuntimeError, "smaller than num_classes"),
        ErrorSample(Sample((T(np.array([0, 2], np.int32)),)), RuntimeError, "LongTensor"),
        ErrorSample(Sample((T(np.zeros(0, np.int64)),)), RuntimeError, "infer"),
        ErrorSample(Sample((x, -2)), RuntimeError, "num_classes"),
        ErrorSample(Sample((x, 2.0)), TypeError),
    ]


OPS = [
    OpInfo("F.embedding", _embedding, (*FLOATS, "int64"), _embedding_samples, _embedding_errors),
    OpInfo("F.embedding max_norm", _embedding_renorm, FLOATS, _renorm_samples),
    OpInfo("F.one_hot", _one_hot, ("int64",), _one_hot_samples, _one_hot_errors),
    # Inferring the number of classes reads the data: the meta device cannot, as in PyTorch.
    OpInfo("F.one_hot inferred", _one_hot, ("int64",), _one_hot_infer_samples, meta=False),
]
