"""Samples for the shape composites (``ember.core.aten.shape.compositions``): broadcast_to, rot90, diag,
block_diag, meshgrid, cartesian_prod and atleast_{1,2,3}d, on every layout (strides are compared with
PyTorch's: rot90's flip and transpose, broadcast_to's and meshgrid's zero strides), with empty sizes
and PyTorch's errors.
"""

from __future__ import annotations

import warnings

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, layouts_of, make


def _ones(*shape, dtype=np.float32):
    return T(np.ones(shape, dtype))


def _broadcast_to_samples(dtype: str, rng) -> list[Sample]:
    out = [Sample((a, (2, 3, 4)), name=f"{a} to (2, 3, 4)") for a in layouts_of((3, 4), dtype, rng)]
    out.append(Sample((make((1,), dtype, rng), (0, 5)), name="to empty"))
    out.append(Sample((make((), dtype, rng), ()), name="0-d"))
    out.append(Sample((make((3, 1), dtype, rng), (-1, 4)), name="-1 keeps a size"))
    return out


def _rot90_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for a in layouts_of((2, 3), dtype, rng):
        for k in (1, 2, 3, 4, 0, -1, 5):
            out.append(Sample((a, k), name=f"{a} k={k}"))
    three = make((2, 3, 4), dtype, rng)
    out.append(Sample((three, 1, [2, 0]), name="dims 2, 0"))
    out.append(Sample((three, 3, [-1, 1]), name="dims -1, 1"))
    out.append(Sample((make((0, 3), dtype, rng),), name="empty"))
    return out


def _rot90_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((_ones(2, 3), 1, [0])), RuntimeError, "rotation dims == 2"),
        ErrorSample(Sample((_ones(3), 1, [0, 1])), RuntimeError, "total dims >= 2"),
        ErrorSample(Sample((_ones(2, 3), 1, [0, 0])), RuntimeError, "rotation dims to be different"),
        ErrorSample(Sample((_ones(2, 3), 1, [0, -2])), RuntimeError, "rotation dims to be different"),
        ErrorSample(Sample((_ones(2, 3), 1, [0, 5])), IndexError, "out of range"),
    ]


def _diag_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for a in layouts_of((4,), dtype, rng):
        for k in (0, 1, -2, 5):
            out.append(Sample((a, k), name=f"{a} k={k}"))
    for a in layouts_of((3, 4), dtype, rng):
        for k in (0, 2, -1, -5):
            out.append(Sample((a, k), name=f"{a} k={k}"))
    out.append(Sample((make((0,), dtype, rng), 1), name="empty vector"))
    return out


def _block_diag_samples(dtype: str, rng) -> list[Sample]:
    return [
        Sample(([make((2, 3), dtype, rng), make((3,), dtype, rng), make((), dtype, rng)],), name="2-d, 1-d, 0-d"),
        Sample(([make((2, 3), dtype, rng, layout="transposed"), make((1, 2), dtype, rng)],), name="transposed"),
        Sample(([make((0, 2), dtype, rng), make((2, 0), dtype, rng), make((0,), dtype, rng)],), name="empty"),
        Sample(([make((2, 2), dtype, rng), make((1,), "float64", rng)],), name="promotes"),
    ]


def _cartesian_samples(dtype: str, rng) -> list[Sample]:
    return [
        Sample(([make((2,), dtype, rng), make((3,), dtype, rng, layout="sliced")],), name="two"),
        Sample(([make((2,), dtype, rng), make((1,), dtype, rng), make((3,), dtype, rng)],), name="three"),
        Sample(([make((0,), dtype, rng), make((3,), dtype, rng)],), name="empty"),
    ]


def _meshgrid_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for indexing in ("ij", "xy"):
        out.append(Sample(([make((2,), dtype, rng), make((3,), dtype, rng)],), {"indexing": indexing}, indexing))
        out.append(
            Sample(
                ([make((2,), dtype, rng), make((), dtype, rng), make((4,), dtype, rng, layout="sliced")],),
                {"indexing": indexing},
                f"three {indexing}",
            )
        )
        out.append(Sample(([make((3,), dtype, rng)],), {"indexing": indexing}, f"one {indexing}"))
    return out


def _meshgrid_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample(([_ones(2), _ones(2, dtype=np.float64)],), {"indexing": "ij"}), RuntimeError, "same dtype"),
        ErrorSample(Sample(([_ones(2, 2)],), {"indexing": "ij"}), RuntimeError, "Expected 0D or 1D tensor"),
        ErrorSample(Sample(([_ones(2)],), {"indexing": "yx"}), RuntimeError, "indexing must be one of"),
    ]


def _atleast_samples(dtype: str, rng) -> list[Sample]:
    shapes = [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)]
    out = [Sample((make(s, dtype, rng),), name=f"{s}") for s in shapes]
    out.append(Sample(([make(s, dtype, rng) for s in shapes],), name="a list"))
    out.append(Sample((make((), dtype, rng), make((3,), dtype, rng)), name="several"))
    return out


def _meshgrid_unspecified(lib, tensors):
    # No indexing: "ij", with the warning that PyTorch gives (checked in test_compositions.py).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return lib.meshgrid(*tensors)


def _tensor_split_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for a in layouts_of((7, 4), dtype, rng):
        out.append(Sample((a, 3), name=f"{a} 3 sections"))
        out.append(Sample((a, [1, 10, 3]), name=f"{a} indices"))
    a = make((3, 5), dtype, rng)
    out.append(Sample((a, 2), {"dim": -1}, "dim -1"))
    out.append(Sample((a, 8), {"dim": 1}, "more sections than elements"))
    out.append(Sample((make((0, 2), dtype, rng), 2), name="empty"))
    return out


def _tensor_split_tensor_samples(dtype: str, rng) -> list[Sample]:
    a = make((3, 5), dtype, rng)
    return [
        Sample((a, T(np.array(4))), {"dim": 1}, "a 0-d tensor of sections"),
        Sample((a, T(np.array([1, 3]))), {"dim": 1}, "a tensor of indices"),
    ]


def _tensor_split_errors() -> list[ErrorSample]:
    return [
        ErrorSample(Sample((T(np.float32(1)), 2)), RuntimeError, "at least a 1-dimensional tensor"),
        ErrorSample(Sample((_ones(3), 0)), RuntimeError, "number of sections must be larger than 0"),
        ErrorSample(Sample((_ones(3), T(np.array([1.0, 2.0])))), RuntimeError, "dtype of long"),
        ErrorSample(Sample((_ones(3), T(np.ones((2, 2), np.int64)))), RuntimeError, "zero-dimensional or one-dim"),
    ]


def _directional_samples(name: str):
    def samples(dtype: str, rng) -> list[Sample]:
        shape = {"hsplit": (3, 4), "vsplit": (4, 3), "dsplit": (2, 3, 4)}[name]
        out = [Sample((a, 2), name=f"{a} halves") for a in layouts_of(shape, dtype, rng)]
        out.append(Sample((make(shape, dtype, rng), [1, 3]), name="indices"))
        if name == "hsplit":
            out.append(Sample((make((6,), dtype, rng), 3), name="1-d"))
        return out

    return samples


def _directional_errors(name: str):
    def errors() -> list[ErrorSample]:
        shape = {"hsplit": (3, 4), "vsplit": (4, 3), "dsplit": (2, 3, 4)}[name]
        return [
            ErrorSample(Sample((_ones(*shape), 3)), RuntimeError, "is not divisible by the split_size"),
            ErrorSample(Sample((T(np.float32(1)), 2)), RuntimeError, "requires a tensor with at least"),
        ]

    return errors


def _method(name):
    return lambda lib, self, *a, **k: getattr(self, name)(*a, **k)


def _call(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _splat(name):
    return lambda lib, tensors, **k: getattr(lib, name)(*tensors, **k)


OPS = [
    OpInfo("broadcast_to", _call("broadcast_to"), ALL, _broadcast_to_samples),
    OpInfo("Tensor.broadcast_to", _method("broadcast_to"), ("float32",), _broadcast_to_samples),
    OpInfo("rot90", _call("rot90"), ALL, _rot90_samples, _rot90_errors),
    OpInfo("Tensor.rot90", _method("rot90"), ("float32",), _rot90_samples),
    OpInfo(
        "diag",
        _call("diag"),
        ALL,
        _diag_samples,
        lambda: [ErrorSample(Sample((_ones(2, 2, 2),)), RuntimeError, "Supports 1D or 2D tensors. Got 3D")],
        out=True,
    ),
    OpInfo("Tensor.diag", _method("diag"), ("float32",), _diag_samples),
    OpInfo(
        "block_diag",
        _splat("block_diag"),
        ALL,
        _block_diag_samples,
        lambda: [ErrorSample(Sample(([_ones(2), _ones(2, 2, 2)],)), RuntimeError, "Input 1 has 3 dimensions")],
    ),
    OpInfo(
        "cartesian_prod",
        _splat("cartesian_prod"),
        ALL,
        _cartesian_samples,
        lambda: [ErrorSample(Sample(([_ones(2, 2)],)), RuntimeError, "Expect a 1D vector")],
    ),
    OpInfo("meshgrid", _splat("meshgrid"), ALL, _meshgrid_samples, _meshgrid_errors),
    OpInfo("meshgrid_list", _call("meshgrid"), ("float32",), _meshgrid_samples),
    OpInfo("meshgrid_unspecified", _meshgrid_unspecified, ("float32", "int64"), _cartesian_samples),
    *(OpInfo(f"atleast_{n}d", _call(f"atleast_{n}d"), ALL, _atleast_samples) for n in (1, 2, 3)),
    OpInfo("tensor_split", _call("tensor_split"), ALL, _tensor_split_samples, _tensor_split_errors),
    OpInfo("Tensor.tensor_split", _method("tensor_split"), ("float32",), _tensor_split_samples),
    # Sections or indices held in a tensor: read from its values, so no meta result (as in PyTorch).
    OpInfo(
        "tensor_split_tensor", _call("tensor_split"), ("float32", "int64"), _tensor_split_tensor_samples, meta=False
    ),
    *(
        OpInfo(name, _call(name), ALL, _directional_samples(name), _directional_errors(name))
        for name in ("hsplit", "vsplit", "dsplit")
    ),
    OpInfo("Tensor.hsplit", _method("hsplit"), ("float32",), _directional_samples("hsplit")),
]
