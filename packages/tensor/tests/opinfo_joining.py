"""Samples for the joining family (``ember.core.aten.shape.joining``): cat and its aliases, stack, and the
``*stack`` helpers.

The channels-last tables build each input as an (N, H, W, C) tensor and permute it to (N, C, H, W) in
both libraries, so the inputs carry channels-last strides and cat's output memory format is tested.
"""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, layouts_of, make

OTHER_DTYPES = ("float64", "int32", "bool", "complex64", "float16", "uint8")


def _cat_samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
    out = []
    for a in layouts_of((3, 4), dtype, rng):
        out.append(Sample(([a, make((2, 4), dtype, rng)], 0), name=f"[{a}, (2,4)] dim 0"))
        out.append(Sample(([make((3, 2), dtype, rng), a], 1), name=f"[(3,2), {a}] dim 1"))
        out.append(Sample(([a, a, make((3, 1), dtype, rng)], -1), name=f"[{a} x2, (3,1)] dim -1"))
    for a in layouts_of((2, 3, 4), dtype, rng):
        out.append(Sample(([a, make((2, 2, 4), dtype, rng)], 1), name=f"[{a}, (2,2,4)] dim 1"))
        out.append(Sample(([a, make((2, 3, 4), dtype, rng, layout="transposed")], 2), name=f"[{a}, T(2,3,4)] dim 2"))
    # Legacy empty tensors, shape (0,), are skipped whatever the others' shapes, but promote.
    legacy = make((0,), dtype, rng)
    x = make((3, 4), dtype, rng)
    out.append(Sample(([legacy, x, legacy], 1), name="[(0,), (3,4), (0,)] dim 1"))
    out.append(Sample(([legacy, x], -2), name="[(0,), (3,4)] dim -2"))
    out.append(Sample(([legacy, legacy], 0), name="[(0,), (0,)]"))
    out.append(Sample(([legacy, legacy], 5), name="[(0,), (0,)] dim 5 (never wrapped)"))
    out.append(Sample(([legacy, make((0,), "float64", rng)], 0), name="[(0,), float64 (0,)]"))
    out.append(Sample(([make((0,), "int8", rng), x], 0), name="[int8 (0,), (3,4)]"))
    # Other empty tensors are not skipped.
    out.append(Sample(([make((0, 4), dtype, rng), x], 0), name="[(0,4), (3,4)] dim 0"))
    out.append(Sample(([x, make((3, 0), dtype, rng)], 1), name="[(3,4), (3,0)] dim 1"))
    out.append(Sample(([make((0, 4), dtype, rng), make((0, 4), dtype, rng)], 1), name="[(0,4), (0,4)] dim 1"))
    # 1-D, a single tensor, many tensors.
    out.append(Sample(([make((5,), dtype, rng), make((3,), dtype, rng)],), name="[(5,), (3,)]"))
    out.append(Sample(([x],), name="[(3,4)]"))
    out.append(Sample(([make((1, 2), dtype, rng) for _ in range(5)], 0), name="5 x (1,2)"))
    # Type promotion across the inputs.
    for other in OTHER_DTYPES:
        out.append(Sample(([x, make((2, 4), other, rng)], 0), name=f"[(3,4), {other} (2,4)]"))
        out.append(Sample(([make((3, 1), other, rng), x, make((3, 1), "int16", rng)], 1), name=f"[{other}, x, int16]"))
    # Errors, compared with PyTorch's error types.
    out.append(Sample(([x, make((2, 3), dtype, rng)], 0), name="sizes differ off the dim"))
    out.append(Sample(([x, make((3, 4, 1), dtype, rng)], 0), name="ndims differ"))
    out.append(Sample(([x, x], 2), name="dim out of range"))
    out.append(Sample(([x, x], -3), name="negative dim out of range"))
    out.append(Sample(([make((), dtype, rng), x], 0), name="0-dim tensor"))
    out.append(Sample(([legacy, make((), dtype, rng)], 0), name="0-dim after a legacy empty"))
    out.append(Sample(([], 0), name="empty list"))
    return out


def _cat_errors() -> list[ErrorSample]:
    x = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample(([], 0)), ValueError, "non-empty list"),
        ErrorSample(Sample(([x, T(np.ones((2, 4), np.float32))], 0)), RuntimeError, "Sizes of tensors must match"),
        ErrorSample(Sample(([x, T(np.ones((2, 3, 1), np.float32))], 0)), RuntimeError, "same number of dimensions"),
        ErrorSample(Sample(([x, x], 2)), IndexError, "Dimension out of range"),
        ErrorSample(Sample(([x, T(np.ones((), np.float32))], 0)), RuntimeError, "zero-dimensional tensor"),
        ErrorSample(Sample(([x, 3], 0)), TypeError, "expected Tensor as element 1"),
        ErrorSample(Sample((x, 0)), TypeError, "tuple of Tensors"),
        ErrorSample(Sample(([x, x],), {"dim": 0.5}), TypeError, "must be int"),
    ]


def _devices_samples(dtype: str, rng) -> list[Sample]:
    x = make((2, 3), dtype, rng)
    return [Sample((x, x), name="cpu then meta")]


def _cat_on_two_devices(lib, a, b, out=None):
    return lib.cat([a, b.to("meta")]) if out is None else lib.cat([a, b.to("meta")], out=out)


def _nhwc(shape: tuple, dtype: str, rng) -> T:
    """An (N, C, H, W) tensor stored as (N, H, W, C): built here as NHWC, permuted by the call."""
    n, c, *spatial = shape
    return make((n, *spatial, c), dtype, rng)


def _to_channels_first(lib, t):
    if t.ndim == 4:
        return t.permute(0, 3, 1, 2)
    return t.permute(0, 4, 1, 2, 3)


def _cat_channels_last(lib, tensors, dim=0, *, plain=(), out=None):
    inputs = [t if i in plain else _to_channels_first(lib, t) for i, t in enumerate(tensors)]
    return lib.cat(inputs, dim) if out is None else lib.cat(inputs, dim, out=out)


def _channels_last_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for dim in (0, 1, 2, -1):
        out.append(
            Sample(([_nhwc((2, 3, 4, 5), dtype, rng), _nhwc((2, 3, 4, 5), dtype, rng)], dim), name=f"cl dim {dim}")
        )
        out.append(Sample(([_nhwc((2, 3, 2, 2, 3), dtype, rng)] * 2, dim), name=f"cl3d dim {dim}"))
    # A contiguous NCHW input among channels-last ones: the result is contiguous.
    plain = make((2, 3, 4, 5), dtype, rng)
    out.append(Sample(([_nhwc((2, 3, 4, 5), dtype, rng), plain], 1), {"plain": (1,)}, name="cl + contiguous"))
    # A legacy empty input suggests contiguous too.
    out.append(
        Sample(([_nhwc((2, 3, 4, 5), dtype, rng), make((0,), dtype, rng)], 1), {"plain": (1,)}, name="cl + (0,)")
    )
    # Ambiguous shapes: C == 1, H == W == 1 (PyTorch calls N111 contiguous).
    out.append(Sample(([_nhwc((2, 1, 4, 5), dtype, rng)] * 2, 0), name="C=1"))
    out.append(Sample(([_nhwc((2, 3, 1, 1), dtype, rng)] * 2, 1), name="H=W=1"))
    out.append(Sample(([_nhwc((2, 1, 1, 1), dtype, rng)] * 2, 0), name="N111"))
    out.append(Sample(([_nhwc((1, 3, 4, 5), dtype, rng), _nhwc((2, 3, 4, 5), dtype, rng)], 0), name="N=1"))
    out.append(Sample(([_nhwc((2, 3, 4, 5), dtype, rng), _nhwc((2, 3, 4, 5), "float64", rng)], 3), name="promotes"))
    return out


def _stack_samples(dtype: str, rng) -> list[Sample]:
    out = []
    for shape in ((3, 4), (2, 3, 4), (5,), (), (0, 3), (3, 0)):
        for a in layouts_of(shape, dtype, rng):
            b = make(shape, dtype, rng)
            for dim in sorted({0, len(shape), -1, -len(shape) - 1}):
                out.append(Sample(([a, b], dim), name=f"[{a}, {b}] dim {dim}"))
    x = make((3, 4), dtype, rng)
    out.append(Sample(([x],), name="one tensor"))
    out.append(Sample(([x, x, x], 1), name="three tensors"))
    out.append(Sample(([x, make((3, 4), "float64", rng), make((3, 4), "bool", rng)], 1), name="promotes"))
    out.append(Sample(([x, make((3, 5), dtype, rng)], 0), name="unequal shapes"))
    out.append(Sample(([x, make((3, 5), dtype, rng)], 2), name="unequal shapes, last dim"))
    out.append(Sample(([make((0,), dtype, rng), make((2,), dtype, rng)], 0), name="legacy empty is not skipped"))
    out.append(Sample(([x, x], 3), name="dim out of range"))
    out.append(Sample(([x, x], -4), name="negative dim out of range"))
    out.append(Sample(([], 0), name="empty list"))
    return out


def _stack_channels_last(lib, tensors, dim=0, *, out=None):
    inputs = [_to_channels_first(lib, t) for t in tensors]
    return lib.stack(inputs, dim) if out is None else lib.stack(inputs, dim, out=out)


def _stack_channels_last_samples(dtype: str, rng) -> list[Sample]:
    return [
        Sample(([_nhwc((2, 3, 4, 5), dtype, rng), _nhwc((2, 3, 4, 5), dtype, rng)], dim), name=f"cl dim {dim}")
        for dim in (0, 1, 2, 3, 4, -1)
    ]


def _stack_errors() -> list[ErrorSample]:
    x = T(np.ones((2, 3), np.float32))
    return [
        ErrorSample(Sample(([], 0)), RuntimeError, "non-empty TensorList"),
        ErrorSample(Sample(([x, T(np.ones((2, 4), np.float32))], 0)), RuntimeError, "equal size"),
        ErrorSample(Sample(([x, x], 3)), IndexError, "Dimension out of range"),
        ErrorSample(Sample(([x, 1], 0)), TypeError, "expected Tensor"),
    ]


def _helper_samples(name: str):
    def samples(dtype: str, rng) -> list[Sample]:
        out = []
        groups = [
            [(), ()],
            [(), (3,)] if name == "hstack" else [(3,), (3,)],
            [(3,), (3, 2)] if name == "column_stack" else [(3,), (3,)],
            [(3,), (2,)] if name == "hstack" else [(3,), (3,)],
            [(2, 3), (2, 3)],
            [(2, 3), (2, 1)] if name in ("hstack", "dstack") else [(2, 3), (1, 3)],
            [(3,), (2, 3)] if name == "vstack" else [(2, 3, 4), (2, 3, 1)],
            [(2, 3, 4), (2, 3, 4)],
            [(0, 3), (0, 3)],
        ]
        for shapes in groups:
            for a in layouts_of(shapes[0], dtype, rng):
                out.append(Sample(([a, *(make(s, dtype, rng) for s in shapes[1:])],), name=f"{a} + {shapes[1:]}"))
        out.append(Sample(([make((2, 3), dtype, rng), make((2, 3), "float64", rng)],), name="promotes"))
        out.append(Sample(([make((2, 3), dtype, rng), make((4, 5), dtype, rng)],), name="mismatch"))
        out.append(Sample(([],), name="empty list"))
        return out

    return samples


def _helper(name: str) -> OpInfo:
    def call(lib, tensors, *, out=None):
        fn = getattr(lib, name)
        return fn(tensors) if out is None else fn(tensors, out=out)

    return OpInfo(name, call, ALL, _helper_samples(name), out=True)


def _alias(name: str, keyword: str) -> OpInfo:
    def call(lib, tensors, dim=0, *, out=None):
        kwargs = {keyword: dim} if out is None else {keyword: dim, "out": out}
        return getattr(lib, name)(tensors, **kwargs)

    def samples(dtype: str, rng) -> list[Sample]:
        x = make((3, 4), dtype, rng, layout="transposed")
        return [Sample(([x, make((3, 2), dtype, rng)], 1)), Sample(([x, make((2, 4), "int64", rng)], -2))]

    return OpInfo(f"{name}({keyword}=)", call, ALL, samples, out=True)


def _cat(lib, tensors, dim=0, *, out=None):
    return lib.cat(tensors, dim) if out is None else lib.cat(tensors, dim, out=out)


def _stack(lib, tensors, dim=0, *, out=None):
    return lib.stack(tensors, dim) if out is None else lib.stack(tensors, dim, out=out)


OPS = [
    OpInfo("cat", _cat, ALL, _cat_samples, errors=_cat_errors, out=True),
    OpInfo("cat_channels_last", _cat_channels_last, ALL, _channels_last_samples, out=True),
    OpInfo("cat_two_devices", _cat_on_two_devices, ("float32",), _devices_samples, meta=False),
    _alias("cat", "axis"),
    _alias("concat", "dim"),
    _alias("concatenate", "axis"),
    OpInfo("stack", _stack, ALL, _stack_samples, errors=_stack_errors, out=True),
    OpInfo("stack_channels_last", _stack_channels_last, ALL, _stack_channels_last_samples, out=True),
    _helper("hstack"),
    _helper("vstack"),
    _helper("dstack"),
    _helper("column_stack"),
]
