"""Samples for the copying family (``ember.core.aten.shape.copying``): ``clone`` and ``contiguous``
in every layout (strides compared: ``preserve_format`` keeps dense strides), dtype conversions,
and the in-place ``copy_``, ``fill_`` and ``zero_``."""

from __future__ import annotations

import numpy as np
from opinfo import ALL, ErrorSample, OpInfo, Sample, T, layouts_of, make

SHAPES = [(3, 4), (2, 3, 4), (5,), (), (0, 3), (4, 1)]


def _each_layout(extra=lambda dtype: [((), {})]):
    def samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
        out = []
        for shape in SHAPES:
            for spec in layouts_of(shape, dtype, rng, low=0, high=9):
                for args, kwargs in extra(dtype):
                    out.append(Sample((spec, *args), kwargs, name=f"{spec} {args} {kwargs or ''}"))
        return out

    return samples


def _memory_format(lib, kwargs):
    if isinstance(kwargs.get("memory_format"), str):
        kwargs = {**kwargs, "memory_format": getattr(lib, kwargs["memory_format"])}
    return kwargs


def _clone(lib, t, **kwargs):
    return t.clone(**_memory_format(lib, kwargs))


def _to(lib, t, name):
    return t.to(getattr(lib, name))


def _copy_into(lib, t, src):
    return t.copy_(src)


CONVERSIONS = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64"]


def _copy_samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
    out = []
    for shape in [(3, 4), (2, 3, 4)]:
        for spec in layouts_of(shape, dtype, rng, low=0, high=9):
            if spec.layout == "expanded":
                continue  # writing distinct values into an expanded tensor is an error (test_tensor)
            for src_dtype in ("float64", "int32", "bool", dtype):
                out.append(
                    Sample((spec, make(shape[-1:], src_dtype, rng, low=0, high=9)), name=f"{spec} <- {src_dtype}")
                )
            out.append(
                Sample((spec, make(shape, "float32", rng, low=0, high=9, layout="transposed")), name=f"{spec} <- T")
            )
    return out


def _fill_samples(dtype: str, rng: np.random.Generator) -> list[Sample]:
    out = []
    for shape in [(3, 4), (), (0, 2)]:
        for spec in layouts_of(shape, dtype, rng, low=0, high=9):
            for value in (2, 1.5, True, -1):
                out.append(Sample((spec, value), name=f"{spec} {value!r}"))
            out.append(Sample((spec, T(np.array(3, np.int64))), name=f"{spec} tensor(3)"))
    return out


OPS = [
    OpInfo(
        "clone",
        _clone,
        ALL,
        _each_layout(
            lambda d: [
                ((), {}),
                ((), {"memory_format": "preserve_format"}),
                ((), {"memory_format": "contiguous_format"}),
            ]
        ),
    ),
    OpInfo("clone_function", lambda lib, t: lib.clone(t), ("float32",), _each_layout()),
    OpInfo("contiguous", lambda lib, t: t.contiguous(), ALL, _each_layout()),
    OpInfo("to_dtype", _to, ALL, _each_layout(lambda d: [((name,), {}) for name in CONVERSIONS])),
    *[
        OpInfo(f"method_{name}", lambda lib, t, name=name: getattr(t, name)(), ("float64", "int64"), _each_layout())
        for name in ("float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool", "cfloat")
    ],
    OpInfo(
        "copy_",
        _copy_into,
        ("float32", "int64", "bool", "complex64", "float16"),
        _copy_samples,
        inplace=_copy_into,
        errors=lambda: [
            ErrorSample(
                Sample((T(np.zeros((2, 3), np.float32)), T(np.zeros((4,), np.float32)))),
                RuntimeError,
                "must match the size",
            ),
            ErrorSample(
                Sample((T(np.zeros((2, 3), np.float32), "expanded"), T(np.ones((2, 3), np.float32)))), RuntimeError
            ),
        ],
    ),
    OpInfo(
        "fill_",
        lambda lib, t, value: t.fill_(value),
        ("float32", "int64", "bool", "complex64", "bfloat16", "uint8"),
        _fill_samples,
        inplace=lambda lib, t, value: t.fill_(value),
        errors=lambda: [
            ErrorSample(Sample((T(np.zeros(3, np.float32)), T(np.zeros(2, np.float32)))), RuntimeError, "0-dimension"),
            ErrorSample(Sample((T(np.zeros(3, np.int64)), 1 + 2j)), RuntimeError, "overflow"),
        ],
    ),
    OpInfo(
        "zero_",
        lambda lib, t: t.zero_(),
        ("float32", "bool", "complex64"),
        _each_layout(),
        inplace=lambda lib, t: t.zero_(),
    ),
]
