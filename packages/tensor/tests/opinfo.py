"""The OpInfo-style table machinery: samples described once, built identically in Ember and PyTorch.

A sample's tensors are ``T`` specs: a NumPy array and a layout (``contiguous``, ``transposed``,
``sliced``, ``expanded``). ``build(spec, lib)`` makes the same tensor, with the same strides, in
``ember`` or ``torch``. An ``OpInfo`` names an op, how to call it on a library module (``call(lib,
*args, **kwargs)``), the dtypes it supports, its samples, its error samples and its variants.

Tables live in ``opinfo_*.py`` modules beside this one, each defining ``OPS``; ``test_ops.py``
runs every check over every table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

import ember

try:
    import torch
except ImportError:  # the oracle is installed only in the Python 3.11 test sessions
    torch = None

ORACLE_MISSING = "the oracle torch==2.13.0 is installed only in the Python 3.11 test sessions"

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8")
ALL_REAL = (*FLOATS, *INTS, "bool")
ALL = (*ALL_REAL, "complex64")
NP_DTYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "bool": np.bool_,
    "complex64": np.complex64,
    "complex128": np.complex128,
}
TOLERANCES = {  # (rtol, atol)
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


@dataclass(frozen=True)
class T:
    """A tensor to build: ``array`` holds the values; ``layout`` says how they sit in memory."""

    array: np.ndarray
    layout: str = "contiguous"
    requires_grad: bool = False

    def __repr__(self) -> str:
        return f"T{list(self.array.shape)}:{self.array.dtype}:{self.layout}"


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = ""

    def __repr__(self) -> str:
        return self.name or f"{self.args}{self.kwargs or ''}"


@dataclass
class ErrorSample:
    sample: Sample
    error: type[BaseException]
    match: str | None = None  # a fragment of the message, where ours should name the problem


@dataclass
class OpInfo:
    name: str
    call: Callable  # call(lib, *args, **kwargs) for lib in (ember, torch)
    dtypes: tuple[str, ...]
    samples: Callable[[str, np.random.Generator], list[Sample]]
    errors: Callable[[], list[ErrorSample]] = lambda: []
    inplace: Callable | None = None  # inplace(lib, first_tensor, *args, **kwargs)
    out: bool = False  # call(lib, ..., out=tensor) is supported
    check_strides: bool = True  # compare result strides with PyTorch's
    meta: bool = True
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    # For values where PyTorch's own answer depends on the CPU it runs on (its vector kernels differ
    # between AVX2 and AVX-512 machines): ``oracle_fix(sample, expected)`` returns the oracle's
    # NumPy result with those entries set to the correct value, which is what Ember gives everywhere.
    oracle_fix: Callable[[Sample, np.ndarray], np.ndarray] | None = None
    # Samples at which the op has no unique gradient (several answers are right, and which one a
    # library gives depends on its LAPACK's kernels): gradient tests leave them out.
    no_unique_gradient: Callable[[Sample], bool] | None = None
    # Whether the gradient, forward-AD and vmap sweeps take this entry: not for an out= overload,
    # which refuses gradients and vmap by design (its functional form's entry is swept).
    transforms: bool = True

    def __repr__(self) -> str:
        return self.name

    def expected(self, sample: Sample, theirs: np.ndarray) -> np.ndarray:
        return theirs if self.oracle_fix is None else self.oracle_fix(sample, theirs)


# -- building tensors ------------------------------------------------------------------------------


def build(value: Any, lib) -> Any:
    """Turn every ``T`` inside ``value`` into a tensor of ``lib``; other values pass through."""
    if isinstance(value, T):
        return _build_tensor(value, lib)
    if isinstance(value, list):
        return [build(v, lib) for v in value]
    if isinstance(value, tuple):
        return tuple(build(v, lib) for v in value)
    if isinstance(value, dict):
        return {k: build(v, lib) for k, v in value.items()}
    return value


def functional(lib):
    """``torch.nn.functional`` for torch, ``ember.core.functional`` for ember: where the F-only ops live."""
    if lib is ember:
        from ember.core import functional as ember_functional

        return ember_functional
    return lib.nn.functional


def _dtype(lib, name: str):
    return getattr(lib, name)


def _from_numpy(array: np.ndarray, lib):
    name = next(k for k, v in NP_DTYPES.items() if np.dtype(v) == array.dtype)
    if name == "bfloat16":
        return (
            lib.tensor(array.astype(np.float32).tolist(), dtype=lib.float32)
            .to(_dtype(lib, "bfloat16"))
            .reshape(array.shape)
        )
    return lib.tensor(array.tolist(), dtype=_dtype(lib, name)).reshape(array.shape)


def _build_tensor(spec: T, lib):
    array = spec.array
    if spec.layout == "contiguous":
        out = _from_numpy(array, lib)
    elif spec.layout == "transposed":
        # Stored transposed in memory, shown in the requested shape.
        out = _from_numpy(np.ascontiguousarray(array.T), lib).permute(*reversed(range(array.ndim)))
    elif spec.layout == "sliced":
        # Every other element of the last dimension of a twice-as-wide tensor.
        wide = np.repeat(array, 2, axis=-1) if array.ndim else array
        out = _from_numpy(wide, lib)
        if array.ndim:
            out = out[..., ::2]
    elif spec.layout == "expanded":
        # A size-1 first dimension expanded to the requested size (stride 0).
        out = _from_numpy(array[:1], lib).expand(*array.shape)
    else:
        raise ValueError(f"unknown layout {spec.layout!r}")
    if spec.requires_grad:
        out.requires_grad_(True)
    return out


def assert_masked_results_match(ours, theirs, mask, tolerance: Callable, strides: bool = True) -> None:
    """The results of a backward op with an ``output_mask`` against PyTorch's: None where masked
    out, else the same dtype, shape and (where ``strides``) strides, and values within
    ``tolerance(i, their_result) -> (rtol, atol)``. PyTorch's empty results may have any strides."""
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if not mask[i]:
            assert a is None
            continue
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape)
        if strides and b.numel():
            assert a.stride() == b.stride()
        rtol, atol = tolerance(i, b)
        np.testing.assert_allclose(a.numpy().astype(np.float64), b.numpy().astype(np.float64), rtol=rtol, atol=atol)


def to_numpy(value: Any) -> Any:
    """Results of either library as NumPy values (bfloat16 as float32), for comparison."""
    if isinstance(value, list | tuple):
        return type(value)(to_numpy(v) for v in value)
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach()
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.numpy()
    if isinstance(value, ember.Tensor):
        array = value.numpy(force=True)
        return array.astype(np.float32) if array.dtype == ml_dtypes.bfloat16 else array
    return value


def dtype_name(value) -> str:
    return str(value.dtype).split(".")[-1]


def rounded_float64_reference(call: Callable) -> Callable[[Sample, np.ndarray], np.ndarray]:
    """An ``oracle_fix`` for float16 and bfloat16 samples: PyTorch's result computed in float64 from
    the same values and rounded once to the sample's dtype. PyTorch's half-precision kernels round
    partial sums along the way, by an amount that depends on the CPU's kernels (AVX2 or AVX-512);
    rounding once is the correct value, and what Ember computes."""

    halves = {np.dtype(np.float16): "float16", np.dtype(ml_dtypes.bfloat16): "bfloat16"}

    def widen(value):
        if isinstance(value, T):
            return T(value.array.astype(np.float64), value.layout) if value.array.dtype in halves else value
        if isinstance(value, list | tuple):
            return type(value)(widen(v) for v in value)
        return value

    def fix(sample: Sample, expected: np.ndarray) -> np.ndarray:
        half = next((halves[t.array.dtype] for t in sample.args if isinstance(t, T) and t.array.dtype in halves), None)
        if half is None:
            return expected
        wide = call(torch, *build(widen(sample.args), torch), **build(sample.kwargs, torch))
        return to_numpy(wide.to(getattr(torch, half)))

    return fix


# -- sample helpers --------------------------------------------------------------------------------


def make(shape: tuple, dtype: str, rng: np.random.Generator, low=-9, high=9, layout="contiguous") -> T:
    np_dtype = NP_DTYPES[dtype]
    if dtype == "bool":
        array = rng.integers(0, 2, size=shape).astype(np.bool_)
    elif dtype in INTS:
        lo = 0 if dtype == "uint8" else low
        array = rng.integers(lo, high, size=shape).astype(np_dtype)
    elif dtype.startswith("complex"):
        array = (rng.uniform(low, high, size=shape) + 1j * rng.uniform(low, high, size=shape)).astype(np_dtype)
    else:
        array = rng.uniform(low, high, size=shape).astype(np_dtype)
    return T(np.asarray(array), layout)


def layouts_of(shape: tuple, dtype: str, rng, **kw) -> list[T]:
    """The same shape in each layout that applies to it."""
    specs = [make(shape, dtype, rng, **kw)]
    if len(shape) >= 2:
        specs.append(make(shape, dtype, rng, layout="transposed", **kw))
    if len(shape) >= 1 and shape[-1] > 0:
        specs.append(make(shape, dtype, rng, layout="sliced", **kw))
    if len(shape) >= 1 and shape[0] > 1:
        specs.append(make(shape, dtype, rng, layout="expanded", **kw))
    return specs


def first_tensor(args: tuple):
    for a in args:
        if isinstance(a, T):
            return a
    return None
